"""Where a result derived from a run came from, and whether it is still current.

Files computed from a run's weights (``RUN_DIR/analysis/diagnostics.json``, the entries of
``RUN_DIR/eval.json``) record the checkpoint they came from: its folder name, its step and the sha256 of
its ``model.safetensors``, with the command that computed them. A result is stale when the run has a
newer checkpoint than the one it records, or when that checkpoint's weights changed; a result of older
code records nothing and is stale when the run's newest weights are newer than the file itself.

A result also records the content of the files the run read beyond its folder (``inputs``: the sha256 of
each, from the run record, ``embtie.rundir.inputs``): it is stale when one of them changed since the run
started, or when the digests it records are not the run's — never keyed by a path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embtie.rundir import checkpoints, inputs
from embtie.rundir.digest import file_sha256


def checkpoint_step(ckpt: Path) -> int | None:
    """The training step of a checkpoint folder: from its name (``step-00001234``), else from its
    state.json or info.json (``best``), else None (an average)."""
    name = Path(ckpt).name
    if name.startswith("step-") and name[5:].isdigit():
        return int(name[5:])
    for f in ("state.json", "info.json"):
        try:
            step = json.loads((Path(ckpt) / f).read_text(encoding="utf-8")).get("step")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(step, int):
            return step
    return None


@dataclass(frozen=True)
class Source:
    """A checkpoint whose weights a result was computed from."""

    checkpoint: str
    step: int | None
    model_sha256: str
    inputs: tuple[tuple[str, str], ...] = ()
    """(config key, sha256) of the run's recorded input files (``embtie.rundir.inputs``)."""

    @classmethod
    def of(cls, ckpt: Path, digest: str | None = None) -> Source:
        """The source record of checkpoint folder ``ckpt`` (``digest``: its model.safetensors' sha256, when known)
        and of the inputs its run recorded (its run folder: ``ckpt``'s grandparent)."""
        sha = digest if digest is not None else file_sha256(Path(ckpt) / "model.safetensors")
        recorded = tuple(sorted(inputs.digests(Path(ckpt).parent.parent).items()))
        return cls(checkpoint=Path(ckpt).name, step=checkpoint_step(ckpt), model_sha256=sha, inputs=recorded)

    def to_json(self, command: str) -> dict[str, Any]:
        out: dict[str, Any] = {"checkpoint": self.checkpoint, "step": self.step, "model_sha256": self.model_sha256}
        if self.inputs:
            out["inputs"] = dict(self.inputs)
        return {**out, "command": command}


def newest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint that loading the run uses by default: the newest complete one."""
    found = checkpoints.candidates(run_dir)
    return found[0] if found else None


def stale_reason(
    run_dir: Path, checkpoint: str, model_sha256: str, recorded_inputs: dict[str, str] | None = None
) -> str | None:
    """Why a result of ``run_dir`` computed from ``checkpoint`` (whose weights hashed to ``model_sha256``)
    is out of date — an input file of the run changed since it started, the result records other input
    digests (``recorded_inputs``, when given) than the run's, the run has a newer checkpoint, or those
    weights changed — or None (current)."""
    changed = inputs.changes(Path(run_dir))
    if changed:
        return changed[0]
    if recorded_inputs is not None and recorded_inputs != inputs.digests(Path(run_dir)):
        return "it was computed from other input files than the run records"
    newest = newest_checkpoint(run_dir)
    if newest is None:
        return None  # nothing to compare with (the checkpoints were deleted): the result is all there is
    if newest.name != checkpoint:
        return f"it came from {checkpoint} but the run's newest checkpoint is {newest.name}"
    try:
        now = file_sha256(newest / "model.safetensors")
    except OSError:
        return None
    return None if now == model_sha256 else f"the weights of {checkpoint} changed after it was computed"


def legacy_stale_reason(run_dir: Path, result: Path) -> str | None:
    """Why a result file that records no checkpoint (older code) is out of date: the run's newest weights
    are newer than the file. None when they are not, or when the run has no checkpoint."""
    newest = newest_checkpoint(run_dir)
    try:
        if newest is None or (newest / "model.safetensors").stat().st_mtime <= result.stat().st_mtime:
            return None
    except OSError:
        return None
    return f"it records no checkpoint and the run's newest checkpoint, {newest.name}, was written after it"
