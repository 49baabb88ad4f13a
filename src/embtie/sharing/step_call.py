"""The checks of a loop's ``on_train_step(step, total_steps, optimizer)`` call (``SharingStrategy``, any other
``VocabularyTables``, ``embtie.loop.on_train_step`` and ``EmbtieCallback``): the range of the trainer's own
key (``total_steps`` takes ``schema.TRAINING_STEPS``, the range ``train.max_steps`` is declared with, so the
bound is written once), a step inside the training, and an optimizer that updates the strategy.

A loop's mistakes here are silent otherwise: a NaN or negative step never reaches tie-untie's switch, a
training of 0 steps unties at once, and an optimizer of another model (or none) leaves O without E's Adam
moments. Each is a one-line ``ConfigError`` that names the argument and what it must be.

FSDP1 (``FullyShardedDataParallel``) flattens a unit's parameters into one ``FlatParameter`` per rank whose
slices cut E and O at different offsets, and (with ``use_orig_params=False``) the optimizer sees only the flat
tensor: a strategy whose switch copies E into O and E's moments (``needs``) is refused there; for the others
the optimizer's reach cannot be read through the flat tensor, so it is not checked. FSDP1 needs an
accelerator, so it is recognised by the marker it puts on every parameter it flattened and on the flat one.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from embtie.errors import ConfigError
from embtie.schema import TRAINING_STEPS, Setting, check


def check_step(step: Any, total_steps: Any) -> tuple[int, int]:
    """(step, total_steps) as ints, or a one-line ConfigError: ``total_steps`` in ``train.max_steps``'s range
    (an integer >= 1), ``step`` an integer in [0, total_steps)."""
    total = check(total_steps, int, "on_train_step(total_steps)", TRAINING_STEPS)
    at = check(step, int, "on_train_step(step)", Setting(ge=0))
    if at >= total:
        raise ConfigError(
            f"on_train_step(step={at}) is past the training's {total} steps; steps count from 0 to total_steps - 1"
        )
    return at, total


def check_optimizer(strategy: nn.Module, name: str, optimizer: Any, needs: bool) -> None:
    """Refuse an ``optimizer`` that is not a torch optimizer holding ``strategy``'s trainable parameters
    (None: refused when ``needs``, the strategy's hook carrying optimizer state). ``name``: the strategy's."""
    if optimizer is None:
        if needs:
            raise ConfigError(
                f"strategy {name!r} needs the optimizer in on_train_step(step, total_steps, optimizer): its switch "
                "copies E's optimizer state (Adam's moments, SGD's momentum) to O"
            )
        return
    groups = getattr(optimizer, "param_groups", None)  # foreign: torch's optimizer, or accelerate's wrapper of it
    if not isinstance(groups, list) or not hasattr(optimizer, "state"):  # foreign: the optimizer's state dict
        raise ConfigError(
            f"on_train_step(optimizer=...) must be the torch optimizer that updates the model, "
            f"not {type(optimizer).__name__}"
        )
    held = [p for g in groups for p in g.get("params", ())]
    if any(_flattened(p) for p in [*held, *strategy.parameters()]):
        if needs:
            raise ConfigError(
                f"strategy {name!r} cannot switch between tied and untied under FSDP1 (FullyShardedDataParallel): "
                "its flat parameters hold E and O as slices of one flat tensor per rank that do not line up, so "
                "neither O <- E nor E's optimizer moments can be copied; use FSDP2 (torch.distributed.fsdp."
                "fully_shard, as train.parallel=fsdp does), DDP or ZeroRedundancyOptimizer"
            )
        return
    own = {id(p) for p in strategy.parameters() if p.requires_grad}
    if own and not any(id(p) in own for g in groups for p in g.get("params", ())):
        raise ConfigError(
            f"on_train_step(optimizer=...): this optimizer updates none of strategy {name!r}'s parameters; "
            "pass the optimizer of the model that holds the strategy"
        )


def _flattened(p: Any) -> bool:
    """Whether FSDP1 flattened ``p`` (or ``p`` is its FlatParameter): torch's ``_fsdp_flattened`` marker."""
    return bool(getattr(p, "_fsdp_flattened", False))  # foreign: torch's FSDP1 marker on a tensor


def check_step_call(strategy: nn.Module, name: str, step: Any, total_steps: Any, optimizer: Any, needs: bool) -> None:
    """``check_step`` and ``check_optimizer`` of one call: the whole contract of ``on_train_step``."""
    check_step(step, total_steps)
    check_optimizer(strategy, name, optimizer, needs)


def moment_words(optimizer: Any) -> str:
    """What ``optimizer`` keeps per parameter, in a message's words: "Adam moments" (betas), "momentum" (SGD's
    momentum) or "optimizer state"."""
    groups = getattr(optimizer, "param_groups", ())  # foreign: torch's optimizer, or accelerate's wrapper of it
    if any("betas" in g for g in groups):
        return "Adam moments"
    return "momentum" if any(bool(g.get("momentum", 0)) for g in groups) else "optimizer state"


def keeps_moments(optimizer: Any) -> bool:
    """Whether ``optimizer`` keeps per-parameter moments once it has stepped (Adam's betas, SGD's momentum):
    the state tie-untie's switch copies from E to O. SGD without momentum has none to copy."""
    groups = getattr(optimizer, "param_groups", ())  # foreign: torch's optimizer, or accelerate's wrapper of it
    return any("betas" in g or bool(g.get("momentum", 0)) for g in groups)
