"""The checks of a loop's ``on_train_step(step, total_steps, optimizer)`` call (``SharingStrategy``): the
ranges the trainer's own keys have (``train.max_steps >= 1``), and an optimizer that updates the strategy.

A loop's mistakes here are silent otherwise: a NaN or negative step never reaches tie-untie's switch, a
training of 0 steps unties at once, and an optimizer of another model (or none) leaves O without E's Adam
moments. Each is a one-line ``ConfigError`` that names the argument and what it must be.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from embtie.errors import ConfigError
from embtie.schema import Setting, check


def check_step_call(strategy: nn.Module, name: str, step: Any, total_steps: Any, optimizer: Any, needs: bool) -> None:
    """Refuse a call whose ``step`` is not an integer in [0, total_steps), whose ``total_steps`` is not an
    integer >= 1, or whose ``optimizer`` is not an optimizer holding ``strategy``'s parameters (None:
    refused when ``needs``, the strategy's hook carrying optimizer state). ``name``: the strategy's."""
    total = check(total_steps, int, "on_train_step(total_steps)", Setting(ge=1))
    at = check(step, int, "on_train_step(step)", Setting(ge=0))
    if at >= total:
        raise ConfigError(
            f"on_train_step(step={at}) is past the training's {total} steps; steps count from 0 to total_steps - 1"
        )
    if optimizer is None:
        if needs:
            raise ConfigError(
                f"strategy {name!r} needs the optimizer in on_train_step(step, total_steps, optimizer): its switch "
                "copies E's optimizer state (Adam moments) to O"
            )
        return
    groups = getattr(optimizer, "param_groups", None)  # foreign: torch's optimizer, or accelerate's wrapper of it
    if not isinstance(groups, list) or not hasattr(optimizer, "state"):  # foreign: the optimizer's state dict
        raise ConfigError(
            f"on_train_step(optimizer=...) must be the torch optimizer that updates the model, "
            f"not {type(optimizer).__name__}"
        )
    own = {id(p) for p in strategy.parameters() if p.requires_grad}
    if own and not any(id(p) in own for g in groups for p in g.get("params", ())):
        raise ConfigError(
            f"on_train_step(optimizer=...): this optimizer updates none of strategy {name!r}'s parameters; "
            "pass the optimizer of the model that holds the strategy"
        )
