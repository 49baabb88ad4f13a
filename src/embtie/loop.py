"""The foreign-loop API: the calls a training loop that is not embtie's makes (docs/your-loop.md), at the
package top as ``embtie.param_groups`` and ``embtie.on_train_step``.

- ``param_groups(model, weight_decay=..., lr=...)``, once: the model's parameters in the groups embtie's own
  optimizer uses (``embtie.training.optim.param_groups``, re-exported).
- ``on_train_step(model, step, total_steps, optimizer)``, before every optimizer step: every per-step hook of
  every embtie strategy (and other vocabulary table) inside ``model``, as embtie's trainer runs them:
  tie-untie's switch and, at the first call, the check that the host's init left the strategy's own init.
- ``optimizer_cls_and_kwargs(model, args)``, for transformers' Trainer (the foreign loop most users have):
  embtie's groups handed to ``Trainer(optimizer_cls_and_kwargs=...)``. Trainer's default decays every parameter
  not named bias or norm, which includes embtie's learned scalars and vectors (a learned logit scale, token
  temperatures, nGPT's scales, an output bias); embtie's own optimizer never decays them and gives a learned
  logit scale its own learning rate::

      from embtie.loop import optimizer_cls_and_kwargs
      trainer = Trainer(model=model, args=args, train_dataset=ds,
                        optimizer_cls_and_kwargs=optimizer_cls_and_kwargs(model, args))
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from embtie.errors import ConfigError
from embtie.sharing.base import SharingStrategy
from embtie.sharing.capabilities import VocabularyTables
from embtie.sharing.step_call import check_optimizer, check_step
from embtie.training.optim import param_groups

__all__ = ["on_train_step", "optimizer_cls_and_kwargs", "param_groups"]


def on_train_step(
    model: nn.Module, step: int, total_steps: int, optimizer: torch.optim.Optimizer | None = None
) -> None:
    """Run ``on_train_step(step, total_steps, optimizer)`` of every embtie strategy in ``model`` (the model
    itself may be one), before optimizer step ``step`` (0-based) of ``total_steps``.

    The whole call is checked before any hook runs (``embtie.sharing.step_call``, the checks every strategy
    makes): ``total_steps`` in ``train.max_steps``' range, ``step`` an integer in [0, total_steps), and an
    optimizer that updates each strategy (required by one whose switch copies optimizer state, tie-untie).
    A model that is not a module, or holds no strategy, is refused too: the loop would train without
    embtie's hooks. Each refusal is a one-line ConfigError naming the argument."""
    if not isinstance(model, nn.Module):
        raise ConfigError(
            f"embtie.on_train_step(model=...) must be the torch module being trained, not {type(model).__name__}"
        )
    tables = [m for m in model.modules() if isinstance(m, VocabularyTables)]
    if not tables:
        raise ConfigError(
            f"embtie.on_train_step: this {type(model).__name__} holds no embtie strategy; put one in it "
            "(embtie.sharing.build(...), or embtie.hf.apply for a Hugging Face model) or drop the call"
        )
    check_step(step, total_steps)
    for table in tables:  # every strategy's optimizer before any hook runs: none acts on a call another refuses
        if isinstance(table, SharingStrategy):
            check_optimizer(table, table.name, optimizer, table.needs_step_hook)
    for table in tables:
        table.on_train_step(step, total_steps, optimizer)


def optimizer_cls_and_kwargs(
    model: nn.Module, args: Any, *, embedding_weight_decay: float | None = None
) -> tuple[type, dict[str, Any]]:
    """(optimizer class, keyword arguments) for ``Trainer(optimizer_cls_and_kwargs=...)``: the class and
    settings ``args`` (TrainingArguments: ``optim``, betas, eps, ...) select, over embtie's parameter groups
    of ``model``: matrices decayed by ``args.weight_decay``; vectors, scalars and every strategy's scale
    parameters not decayed; a learned logit scale at ``logit_scale_lr`` x ``args.learning_rate``.

    embedding_weight_decay: the decay of the vocabulary tables (E, a separate O); None keeps the Trainer's
        (``args.weight_decay``), so that only the scale parameters change. embtie's own trainer uses its
        ``train.embedding_weight_decay`` (0 unless given).
    """
    from embtie.hf._require import require_transformers  # embtie.hf needs the hf extra; param_groups does not

    transformers = require_transformers()
    cls, kwargs = transformers.Trainer.get_optimizer_cls_and_kwargs(args, model)
    emb_wd = args.weight_decay if embedding_weight_decay is None else embedding_weight_decay
    groups = param_groups(model, weight_decay=args.weight_decay, embedding_weight_decay=emb_wd, lr=args.learning_rate)
    return cls, {**kwargs, "params": groups}
