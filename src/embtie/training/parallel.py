"""How the objective is spread over the processes of a torchrun job: ``train.parallel`` ddp or fsdp.

- ``ddp`` (the default): every process holds the whole model; ``DistributedDataParallel`` averages the
  gradients over processes.
- ``fsdp``: PyTorch's FSDP2 (``torch.distributed.fsdp.fully_shard``). Each unit the model lists in
  ``fsdp_units()`` (a GPT's blocks) is sharded on its own, then the sharing strategy (input embedding
  and output layer, whatever the strategy) as ONE unit, so a tied matrix is one sharded tensor and
  never "shared with a parameter managed by another FSDP group", then the model as the root (positions,
  final norm). The strategy is not called through ``forward`` but through ``embed``, ``loss`` (the
  memory-lean chunked cross-entropy), ``logits`` and ``regularization``: each is registered as an FSDP
  forward method, so its parameters are gathered before the call and freed after it, and the loss reads
  the head weights inside the unit's forward.

A single process (world size 1) runs the model as it is under either value.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol, cast, runtime_checkable

import torch
from torch import nn
from torch.distributed.fsdp import FSDPModule, fully_shard, register_fsdp_forward_method
from torch.nn.parallel import DistributedDataParallel

from embtie import runtime
from embtie.config import TrainConfig
from embtie.errors import ConfigError
from embtie.sharing.base import SharingStrategy
from embtie.sharing.capabilities import VocabularyTables

SHARING_FORWARD_METHODS = ("embed", "logits", "loss", "regularization")
"""the strategy methods a model or task calls in a forward pass (each gathers the unit under FSDP)."""


@runtime_checkable
class Shardable(Protocol):
    """A model that FSDP can shard: it lists its repeated blocks and holds its strategy as ``sharing``."""

    sharing: SharingStrategy

    def fsdp_units(self) -> list[nn.Module]:
        """The submodules sharded one by one (e.g. the transformer blocks), in forward order."""
        ...


def uses_fsdp(tc: TrainConfig, rt: runtime.Runtime) -> bool:
    """Whether this run shards its model (``train.parallel=fsdp`` on more than one process)."""
    return tc.parallel == "fsdp" and rt.distributed


def is_sharded(model: nn.Module) -> bool:
    """Whether ``model`` has been sharded by ``fully_shard`` (its parameters are DTensors)."""
    return isinstance(model, FSDPModule)


def shard_model(model: nn.Module) -> nn.Module:
    """``fully_shard`` the units of ``model`` (in place): each of ``model.fsdp_units()``, the strategy as
    one unit, then the root. Returns ``model`` (now also an ``FSDPModule``)."""
    if not isinstance(model, Shardable):
        raise ConfigError(
            f"model {type(model).__name__} does not list FSDP units (no fsdp_units()); use train.parallel=ddp"
        )
    names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    if len(names) != len(dict(model.named_parameters())):
        raise ConfigError(
            f"model {type(model).__name__} registers one parameter under two names; FSDP shards each once, "
            "so keep the tie inside the sharing strategy (one Parameter), or use train.parallel=ddp"
        )
    for unit in model.fsdp_units():
        fully_shard(unit)
    fully_shard(model.sharing)
    for method in SHARING_FORWARD_METHODS:
        register_fsdp_forward_method(model.sharing, method)
    fully_shard(model)
    return model


def prepare(model: nn.Module, objective: nn.Module, tc: TrainConfig, rt: runtime.Runtime) -> nn.Module:
    """The module the training loop calls: ``objective`` (which holds ``model``) spread over the processes
    as ``train.parallel`` asks, then compiled when ``train.compile``. Under fsdp, ``model`` is sharded in
    place, so build the optimizer from it only after this call."""
    if uses_fsdp(tc, rt):
        if tc.path_probe:
            raise ConfigError(
                "train.path_probe runs forward passes on rank 0 alone, which a sharded model cannot; "
                "set train.path_probe=0 or train.parallel=ddp"
            )
        shard_model(model)
    elif rt.distributed:
        dev = rt.device
        # a module whose parameters sit idle on some steps (tie-untie's O before the untie) makes DDP search the
        # graph for unused parameters; only then, since the search costs a traversal per step
        idle = any(isinstance(m, VocabularyTables) and m.idle_parameters for m in model.modules())
        objective = DistributedDataParallel(
            objective, device_ids=[dev.index] if dev.type == "cuda" else None, find_unused_parameters=idle
        )
    if tc.compile:
        objective = cast(nn.Module, torch.compile(objective))  # a compiled module is a module (OptimizedModule)
    return objective


@contextlib.contextmanager
def gradient_sync(objective: nn.Module, model: nn.Module, sync: bool) -> Iterator[None]:
    """Within: a backward that all-reduces (DDP) or reduce-scatters (FSDP) gradients only when ``sync``;
    without it they accumulate locally until a later backward that syncs (gradient accumulation)."""
    if sync:
        yield
    elif is_sharded(model):
        assert isinstance(model, FSDPModule)
        model.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            model.set_requires_gradient_sync(True)
    elif isinstance(wrapped := _uncompiled(objective), DistributedDataParallel):
        with wrapped.no_sync():
            yield
    else:
        yield


def _uncompiled(objective: nn.Module) -> nn.Module:
    """The module ``torch.compile`` wrapped, or ``objective`` itself when it is not compiled."""
    return getattr(objective, "_orig_mod", objective)  # foreign: torch.compile's wrapper module
