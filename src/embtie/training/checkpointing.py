"""Writing and restoring the training loop's checkpoints (format and atomicity: ``embtie.checkpoint``).

A checkpoint holds the weights, the optimizer, the ``TrainState`` and, per process, the RNG states
and the task's carry (e.g. an LSTM's hidden state between batches), so a resumed run continues
bitwise as if it had not stopped (on CPU)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch
from torch import nn

from embtie import checkpoint, runtime
from embtie.errors import ConfigError
from embtie.tasks.base import Task
from embtie.training.state import TrainState


def resumable(out: Path, rank: int) -> Path | None:
    """The newest checkpoint of ``out`` whose files this process can read (an unreadable newer one is
    skipped with a warning); None for a run without checkpoints; a CheckpointError (one line) when
    checkpoints exist but none can be read, so that a run is never silently started over."""
    files = ("state.json", "model.safetensors", "optim.safetensors", f"rank{rank}.safetensors")
    return checkpoint.readable(out, files, "resuming from")


def restore(
    ckpt: Path, model: nn.Module, optimizer: torch.optim.Optimizer, task: Task, rt: runtime.Runtime
) -> tuple[TrainState, Any]:
    """Load checkpoint folder ``ckpt`` into model, optimizer and this process's RNG; returns (state, carry)."""
    checkpoint.load_weights(model, ckpt)
    raw = checkpoint.load_state(ckpt)
    if raw.get("world_size", 1) != rt.world_size:
        raise ConfigError(
            f"{ckpt.parent.parent} was trained with {raw.get('world_size')} processes; resume it with the same number"
        )
    checkpoint.load_optimizer(optimizer, ckpt, raw)
    mine = checkpoint.load_rank(ckpt, rt.rank)
    torch.set_rng_state(mine["rng.cpu"])
    if rt.device.type == "cuda" and "rng.cuda" in mine:
        torch.cuda.set_rng_state(mine["rng.cuda"], rt.device)
    return TrainState.from_dict(raw), task.carry_from_tensors(mine, rt.device)


def save(
    out: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    state: TrainState,
    task: Task,
    carry: Any,
    rt: runtime.Runtime,
    keep: int,
    extra: dict[str, Any],
) -> None:
    """Write the checkpoint of ``state.step``: every process its RNG and carry, then rank 0 the
    shared files (``extra`` is stored next to the state), moved into place atomically."""
    step = state.step
    d = checkpoint.tmp_dir(out, step)
    try:
        if rt.is_main:
            checkpoint.begin(out, step)
        runtime.barrier(rt)
        mine = {"rng.cpu": torch.get_rng_state(), **task.carry_to_tensors(carry)}
        if rt.device.type == "cuda":
            mine["rng.cuda"] = torch.cuda.get_rng_state(rt.device)
        checkpoint.save_rank(d, rt.rank, mine)
        runtime.barrier(rt)
        if rt.is_main:
            checkpoint.commit(out, step, model, optimizer, {**state.to_dict(), **extra}, keep=keep)
    except OSError as e:  # full disk, read-only folder, ...: the previous checkpoint stays as it was
        raise _write_error(out, step, d, e) from e
    runtime.barrier(rt)


def _write_error(out: Path, step: int, tmp: Path, e: OSError) -> checkpoint.CheckpointError:
    shutil.rmtree(tmp, ignore_errors=True)
    prev = checkpoint.latest(out)
    return checkpoint.CheckpointError(
        f"could not write the checkpoint of step {step} in {out} ({e.strerror or e}); "
        + (f"the previous one, {prev.name}, is intact" if prev else "no earlier checkpoint exists")
        + "; free space or fix the folder, then run the same command to resume"
    )
