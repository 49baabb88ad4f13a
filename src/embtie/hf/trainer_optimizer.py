"""embtie's parameter groups for transformers' Trainer: the scale parameters of a strategy are not decayed.

Trainer's default decays every parameter not named bias or norm, which includes embtie's learned scalars
and vectors (the learned logit scale ``logit_scale_param``, token temperatures, nGPT's scales, an output
bias); embtie's own optimizer never decays them and gives a learned logit scale its own learning rate
(``logit_scale_lr``). ``optimizer_cls_and_kwargs`` hands embtie's groups
(``embtie.training.optim.param_groups``) to the Trainer, with the optimizer its arguments choose::

    from embtie.hf.trainer_optimizer import optimizer_cls_and_kwargs
    trainer = Trainer(model=model, args=args, train_dataset=ds,
                      optimizer_cls_and_kwargs=optimizer_cls_and_kwargs(model, args))
"""

from __future__ import annotations

from typing import Any

from torch import nn

from embtie.hf._require import require_transformers
from embtie.training.optim import param_groups


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
    transformers = require_transformers()
    cls, kwargs = transformers.Trainer.get_optimizer_cls_and_kwargs(args, model)
    emb_wd = args.weight_decay if embedding_weight_decay is None else embedding_weight_decay
    groups = param_groups(model, weight_decay=args.weight_decay, embedding_weight_decay=emb_wd, lr=args.learning_rate)
    return cls, {**kwargs, "params": groups}
