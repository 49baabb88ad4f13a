"""The weights and optimizer state of an FSDP-sharded model, gathered to (and scattered from) the
single-process checkpoint format of ``embtie.rundir.checkpoints``.

Weights: ``torch.distributed.checkpoint.state_dict.get_model_state_dict`` with full_state_dict=True and
cpu_offload=True gives rank 0 every tensor whole, by the same names as the unsharded model's
``state_dict()``; ``model.safetensors`` written from it is the file a single-process run writes (a tie is
one Parameter, so no name is dropped). Optimizer: torch's full optimizer state is keyed by parameter
name; the checkpoint's is keyed by parameter index (``optimizer.state_dict()``), so it is renumbered in
the order of the optimizer's parameter groups, which is the unsharded optimizer's order.

Every function here is collective: all processes call it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import Tensor, nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from embtie.rundir import checkpoints

GATHER = StateDictOptions(full_state_dict=True, cpu_offload=True)
"""whole tensors, on the CPU of rank 0 only (the other processes get empty dicts)."""
SCATTER = StateDictOptions(full_state_dict=True, strict=True)
"""whole tensors in, each process keeps its shard."""


def gather_weights(model: nn.Module) -> dict[str, Tensor]:
    """{name: whole tensor} on rank 0 (every parameter and persistent buffer), {} on the others."""
    weights: dict[str, Any] = get_model_state_dict(model, options=GATHER)
    return weights


def _param_names(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[str]:
    """The name of each optimizer parameter, in index order (groups in order, parameters in order)."""
    names = {id(p): n for n, p in model.named_parameters()}
    return [names[id(p)] for g in optimizer.param_groups for p in g["params"]]


def gather_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The optimizer's whole state_dict keyed by parameter index (as ``optimizer.state_dict()`` of the
    unsharded model) on rank 0, {} on the others."""
    full: dict[str, Any] = get_optimizer_state_dict(model, optimizer, options=GATHER)
    if not full:
        return {}
    index = {n: i for i, n in enumerate(_param_names(model, optimizer))}
    state = {index[n]: st for n, st in full["state"].items()}
    groups = [{**g, "params": [index[n] for n in g["params"]]} for g in full["param_groups"]]
    return {"state": state, "param_groups": groups}


def load_weights(model: nn.Module, ckpt: Path) -> None:
    """Load ``ckpt/model.safetensors`` (the single-process format) into the shards of ``model``."""
    path = Path(ckpt) / "model.safetensors"
    try:
        weights: dict[str, Any] = load_file(str(path))
    except Exception as e:  # unreadable file
        why = str(e).strip().splitlines()
        raise checkpoints.CheckpointError(
            f"cannot load {path} ({type(e).__name__}: {why[0] if why else ''}); choose another checkpoint of this run"
        ) from e
    checkpoints.check_finite(weights, Path(ckpt), "resume")
    try:
        set_model_state_dict(model, weights, options=SCATTER)
    except Exception as e:  # weights of another model
        why = str(e).strip().splitlines()
        raise checkpoints.CheckpointError(
            f"cannot load {path} ({type(e).__name__}: {why[0] if why else ''}); choose another checkpoint of this run"
        ) from e


def load_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer, ckpt: Path, state: dict[str, Any]) -> None:
    """Load ``ckpt/optim.safetensors`` (keyed by parameter index) into the sharded ``optimizer``."""
    tensors = load_file(str(Path(ckpt) / "optim.safetensors"))
    by_index = checkpoints.optimizer_state(tensors, state["optimizer"])
    names = _param_names(model, optimizer)
    full: dict[str, Any] = {
        "state": {names[i]: st for i, st in by_index["state"].items()},
        "param_groups": [{**g, "params": [names[i] for i in g["params"]]} for g in by_index["param_groups"]],
    }
    set_optimizer_state_dict(model, optimizer, full, options=SCATTER)
