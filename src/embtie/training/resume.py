"""Writing and restoring the training loop's checkpoints (format and atomicity: ``embtie.rundir.checkpoints``).

A checkpoint holds the weights, the optimizer, the ``TrainState`` and, per process, the RNG states
and the task's carry (e.g. an LSTM's hidden state between batches), so a resumed run continues
bitwise as if it had not stopped (on CPU)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from torch import nn

from embtie import files, runtime
from embtie.errors import ConfigError
from embtie.rundir import checkpoints
from embtie.tasks.base import Task
from embtie.training import parallel, sharded_state
from embtie.training.state import TrainState


def resumable(out: Path, rank: int) -> Path | None:
    """The newest checkpoint of ``out`` whose files this process can read (an unreadable newer one is
    skipped with a warning); None for a run without checkpoints; a CheckpointError (one line) when
    checkpoints exist but none can be read, so that a run is never silently started over."""
    files = ("state.json", "model.safetensors", "optim.safetensors", f"rank{rank}.safetensors")
    return checkpoints.readable(out, files, "resuming from")


def restore(
    ckpt: Path, model: nn.Module, optimizer: torch.optim.Optimizer, task: Task, rt: runtime.Runtime
) -> tuple[TrainState, Any]:
    """Load checkpoint folder ``ckpt`` into model, optimizer and this process's RNG; returns (state, carry).
    An FSDP-sharded model (and its optimizer) takes its shards of the whole tensors in the files."""
    sharded = parallel.is_sharded(model)
    if sharded:
        sharded_state.load_weights(model, ckpt)
    else:
        checkpoints.load_weights(model, ckpt, use="resume")
    raw = checkpoints.load_state(ckpt)
    if raw.get("world_size", 1) != rt.world_size:
        raise ConfigError(
            f"{ckpt.parent.parent} was trained with {raw.get('world_size')} processes; resume it with the same number"
        )
    if sharded:
        sharded_state.load_optimizer(model, optimizer, ckpt, raw)
    else:
        checkpoints.load_optimizer(optimizer, ckpt, raw)
    mine = checkpoints.load_rank(ckpt, rt.rank)
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
    shared files (``extra`` is stored next to the state), moved into place atomically. An FSDP-sharded
    model and its optimizer are gathered to rank 0 first, into the single-process format."""
    step = state.step
    d = checkpoints.tmp_dir(out, step)
    try:
        if rt.is_main:
            checkpoints.begin(out, step)
        runtime.barrier(rt)
        mine = {"rng.cpu": torch.get_rng_state(), **task.carry_to_tensors(carry)}
        if rt.device.type == "cuda":
            mine["rng.cuda"] = torch.cuda.get_rng_state(rt.device)
        checkpoints.save_rank(d, rt.rank, mine)
        runtime.barrier(rt)
        if parallel.is_sharded(model):
            weights, optim = sharded_state.gather_weights(model), sharded_state.gather_optimizer(model, optimizer)
            if rt.is_main:
                checkpoints.commit_gathered(out, step, weights, optim, {**state.to_dict(), **extra}, keep=keep)
        elif rt.is_main:
            checkpoints.commit(out, step, model, optimizer, {**state.to_dict(), **extra}, keep=keep)
    except OSError as e:  # full disk, read-only folder, ...: the previous checkpoint stays as it was
        raise _write_error(out, step, d, e, _bytes_needed(model)) from e
    runtime.barrier(rt)


def save_named(out: Path, name: str, model: nn.Module, info: dict[str, Any], rt: runtime.Runtime) -> None:
    """``checkpoint.save_named`` (e.g. ``best``): rank 0 writes. An FSDP-sharded model is gathered first,
    so then every process calls this; otherwise rank 0 alone may."""
    if not parallel.is_sharded(model):
        if rt.is_main:
            checkpoints.save_named(out, name, model, info)
        return
    weights = sharded_state.gather_weights(model)
    if not rt.is_main:
        return
    d = Path(out) / checkpoints.CKPT / name
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".model.safetensors.tmp{os.getpid()}"
    try:
        files.save_tensors({k: v.contiguous() for k, v in weights.items()}, tmp)
        os.replace(tmp, d / "model.safetensors")
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    files.write_atomic(d / "info.json", json.dumps(info, indent=1))


def _bytes_needed(model: nn.Module) -> int:
    """About what one checkpoint takes on disk: the weights and two optimizer moments per weight."""
    return 3 * sum(p.numel() * p.element_size() for p in model.parameters())


def _write_error(out: Path, step: int, tmp: Path, e: OSError, needed: int) -> checkpoints.CheckpointError:
    shutil.rmtree(tmp, ignore_errors=True)
    prev = checkpoints.latest(out)
    return checkpoints.CheckpointError(
        f"could not write the checkpoint of step {step} in {out} ({e.strerror or e}; it takes about "
        f"{needed / 1e6:.1f} MB); "
        + (f"the previous one, {prev.name}, is intact" if prev else "no earlier checkpoint exists")
        + "; free space or fix the folder, then run the same command to resume"
    )
