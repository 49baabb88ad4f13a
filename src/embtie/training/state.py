"""``TrainState``: the loop's counters and records, saved in every checkpoint's state.json."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass
class TrainState:
    """Everything the loop needs to continue exactly where a checkpoint left it."""

    step: int = 0
    """optimizer steps done."""
    step0_loss: float | None = None
    """training loss of the first batch, before any update (all processes)."""
    tokens_seen: int = 0
    """training target tokens, all processes."""
    train_time: float = 0.0
    """seconds spent training (validation and checkpoints excluded), across resumes."""
    elapsed: float = 0.0
    """wall seconds since the run started, across resumes (at the checkpoint)."""
    best_valid_ppl: float | None = None
    best_valid_step: int | None = None
    last_eval: dict[str, Any] | None = None
    """the newest validation: step, full (whole split or capped), loss, ppl, tokens."""
    last_train_loss: float | None = None
    log_nll: float = 0.0
    """summed NLL of the training tokens since the last train record (this process)."""
    log_tokens: int = 0
    log_time: float = 0.0
    metrics_offset: int = 0
    """byte length of metrics.jsonl at the checkpoint (it is truncated back to it on resume)."""
    best_metric: float | None = None
    """best value of ``train.monitor`` so far, and its step (``embtie.training.monitor``)."""
    best_metric_step: int | None = None
    bad_validations: int = 0
    """validations in a row without improvement of ``train.monitor``."""
    lr_scale: float = 1.0
    """factor of the plateau schedule on the learning rate."""
    stopped_early: bool = False
    nonfinite_skipped: int = 0
    """steps skipped for a non-finite loss or gradient (``train.skip_nonfinite``)."""

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrainState:
        """The state of a checkpoint's state.json (keys that are not fields are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
