"""Run logging: RUN_DIR/metrics.jsonl (one JSON record per log event) and TensorBoard when installed.

Each record has at least ``step`` and ``split`` ("train" or "valid"); train records add ``loss``,
``ppl``, ``lr``, ``tokens_per_s``, ``elapsed``; valid records add ``loss``, ``ppl``, ``tokens``.
The file is truncated back to a checkpoint's length on resume, so it never holds a step twice.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


class MetricsLog:
    """Append-only JSONL writer (a no-op on ranks other than 0) plus an optional TensorBoard writer."""

    def __init__(self, run_dir: Path, enabled: bool = True, tensorboard: bool = True) -> None:
        self.path = Path(run_dir) / "metrics.jsonl"
        self.enabled = enabled
        self._tb = None
        if enabled and tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(log_dir=str(Path(run_dir) / "tb"))
            except Exception:  # tensorboard not installed: JSONL only
                self._tb = None

    def truncate(self, offset: int) -> None:
        """Drop everything after byte ``offset`` (records written after the checkpoint we resume from)."""
        if not self.enabled:
            return
        if offset == 0 or not self.path.exists():
            self.path.write_text("", encoding="utf-8")
            return
        with open(self.path, "r+b") as f:
            f.truncate(offset)

    def offset(self) -> int:
        return self.path.stat().st_size if self.enabled and self.path.exists() else 0

    def write(self, record: dict[str, Any]) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({k: _jsonable(v) for k, v in record.items()}) + "\n")
        if self._tb is not None:
            split = record.get("split", "train")
            for k in ("loss", "ppl", "lr", "tokens_per_s"):
                v = record.get(k)
                if isinstance(v, int | float) and math.isfinite(v):
                    self._tb.add_scalar(f"{split}/{k}", v, record["step"])

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """All records of RUN_DIR/metrics.jsonl."""
    p = Path(run_dir) / "metrics.jsonl"
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
