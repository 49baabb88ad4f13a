"""Checkpoint averaging: the element-wise mean of a run's newest step checkpoints, written as one more
checkpoint (``checkpoints/avg-lastN``) that evaluation and decoding can load by name."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import Tensor

from embtie.errors import ConfigError
from embtie.files import save_tensors
from embtie.rundir import checkpoints


def average_state_dicts(states: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    """Element-wise mean of several state dicts, accumulated in float32 (float64 for float64 tensors).

    Each result is cast back to its input dtype; non-float tensors (counters) are taken from the
    last state. Keys that alias one tensor in the last state (tied weights saved twice) alias one
    averaged tensor in the result, so loading it keeps tied weights tied.
    """
    if not states:
        raise ValueError("nothing to average")
    keys = list(states[-1])
    for s in states:
        if list(s) != keys:
            raise ValueError("checkpoints to average have different parameter names")
    out: dict[str, Tensor] = {}
    seen: dict[tuple[object, ...], str] = {}  # (storage, offset, shape, stride) -> the first name of that view
    for key in keys:
        last = states[-1][key]
        alias = (last.untyped_storage().data_ptr(), last.storage_offset(), tuple(last.shape), last.stride())
        if alias in seen:
            out[key] = out[seen[alias]]
            continue
        seen[alias] = key
        if not last.is_floating_point():
            out[key] = last.clone()
            continue
        acc_dtype = torch.float64 if last.dtype == torch.float64 else torch.float32
        acc = torch.zeros(last.shape, dtype=acc_dtype)
        for s in states:
            acc += s[key].to(acc_dtype)
        out[key] = (acc / len(states)).to(last.dtype)
    return out


AVERAGED_PREFIX = "avg-last"


def step_checkpoints(run_dir: str | Path) -> list[Path]:
    """The complete step checkpoints of a run directory, oldest first."""
    root = Path(run_dir) / checkpoints.CKPT
    return sorted(
        p for p in root.glob("step-*") if (p / "model.safetensors").is_file() and (p / "state.json").is_file()
    )


def average_checkpoints(run_dir: str | Path, last: int) -> Path:
    """Average the weights of the newest ``last`` step checkpoints into
    RUN_DIR/checkpoints/avg-last{N}/model.safetensors (fp32 accumulation; tied tensors, stored once
    by safetensors, stay one tensor when loaded). Returns that folder."""
    if last < 1:
        raise ConfigError(f"--last {last} must be >= 1")
    ckpts = step_checkpoints(run_dir)
    if len(ckpts) < last:
        raise ConfigError(
            f"{run_dir} holds {len(ckpts)} step checkpoint(s), fewer than --last {last}; train with "
            f"train.keep_checkpoints={last} (and checkpoints at epoch ends) or average fewer"
        )
    chosen = ckpts[-last:]
    avg = average_state_dicts([load_file(str(p / "model.safetensors")) for p in chosen])
    out = Path(run_dir) / checkpoints.CKPT / f"{AVERAGED_PREFIX}{last}"
    tmp = out.with_name(f".tmp-{out.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        save_tensors({k: v.contiguous() for k, v in avg.items()}, tmp / "model.safetensors")
        sources = json.dumps({"averaged": [p.name for p in chosen]}, indent=1)
        (tmp / "sources.json").write_text(sources, encoding="utf-8")
    except OSError as e:  # a full disk: nothing half-written is left, the checkpoints are untouched
        shutil.rmtree(tmp, ignore_errors=True)
        raise checkpoints.CheckpointError(
            f"could not write {out} ({e.strerror or e}; {_size(avg)} needed); free space, then run the same command"
        ) from None
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


def _size(tensors: dict[str, torch.Tensor]) -> str:
    """The bytes ``tensors`` take on disk, in words (``12.3 MB``)."""
    n = sum(t.numel() * t.element_size() for t in tensors.values())
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n:,} bytes"
