"""The foreign-loop API: the calls a training loop that is not embtie's makes (docs/your-loop.md), at the
package top as ``embtie.param_groups`` and ``embtie.on_train_step``.

- ``param_groups(model, weight_decay=..., lr=...)``, once: the model's parameters in the groups embtie's own
  optimizer uses (``embtie.training.optim.param_groups``, re-exported).
- ``on_train_step(model, step, total_steps, optimizer)``, before every optimizer step: every per-step hook of
  every embtie strategy (and other vocabulary table) inside ``model``, as embtie's trainer runs them:
  tie-untie's switch and, at the first call, the check that the host's init left the strategy's own init.
"""

from __future__ import annotations

import torch
from torch import nn

from embtie.sharing.capabilities import VocabularyTables
from embtie.training.optim import param_groups

__all__ = ["on_train_step", "param_groups"]


def on_train_step(
    model: nn.Module, step: int, total_steps: int, optimizer: torch.optim.Optimizer | None = None
) -> None:
    """Run ``on_train_step(step, total_steps, optimizer)`` of every embtie strategy in ``model`` (the model
    itself may be one), before optimizer step ``step`` (0-based) of ``total_steps``. A model that holds none
    is a one-line ValueError: the loop would train without embtie's hooks."""
    tables = [m for m in model.modules() if isinstance(m, VocabularyTables)]
    if not tables:
        raise ValueError(
            f"embtie.on_train_step: this {type(model).__name__} holds no embtie strategy; put one in it "
            "(embtie.sharing.build(...), or embtie.hf.apply for a Hugging Face model) or drop the call"
        )
    for table in tables:
        table.on_train_step(step, total_steps, optimizer)
