"""Writing and restoring the training loop's checkpoints (format and atomicity: ``embtie.checkpoint``).

A checkpoint holds the weights, the optimizer, the ``TrainState`` and, per process, the RNG states
and the task's carry (e.g. an LSTM's hidden state between batches), so a resumed run continues
bitwise as if it had not stopped (on CPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from embtie import checkpoint, runtime
from embtie.errors import ConfigError
from embtie.tasks.base import Task
from embtie.training.state import TrainState


def restore(
    out: Path, model: nn.Module, optimizer: torch.optim.Optimizer, task: Task, rt: runtime.Runtime
) -> tuple[TrainState, Any] | None:
    """Load the newest checkpoint of ``out`` into model, optimizer and this process's RNG; returns
    (state, carry), or None when the run has no checkpoint yet."""
    ckpt = checkpoint.latest(out)
    if ckpt is None:
        return None
    checkpoint.load_weights(model, ckpt)
    raw = checkpoint.load_state(ckpt)
    if raw.get("world_size", 1) != rt.world_size:
        raise ConfigError(f"{out} was trained with {raw.get('world_size')} processes; resume it with the same number")
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
    runtime.barrier(rt)
