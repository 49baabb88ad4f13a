"""EmbtieCallback: the per-step hooks of embtie's strategies under transformers' Trainer.

Some strategies act between optimizer steps (``VocabularyTables.on_train_step``): tie-untie unties at a
fraction of training and carries E's optimizer moments over to O; every strategy checks at the first step
that the host's init left its own in place. embtie's trainer and a user's own loop call the hook
(docs/your-loop.md); under transformers' ``Trainer`` this callback does, before every optimizer step::

    from embtie.hf.callback import EmbtieCallback
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[EmbtieCallback()])

The step is the Trainer's ``state.global_step`` (optimizer steps done, so gradient accumulation counts
once per update) of ``state.max_steps``; the optimizer is the Trainer's (accelerate's wrapper hands its
``state`` through).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from embtie.hf._require import require_transformers

require_transformers()

from transformers import TrainerCallback  # noqa: E402

from embtie.errors import ConfigError  # noqa: E402
from embtie.hf.model import EmbtieModelMixin  # noqa: E402
from embtie.hf.peft_compat import active_sharing  # noqa: E402
from embtie.schema import TRAINING_STEPS, check  # noqa: E402
from embtie.sharing.base import SharingStrategy  # noqa: E402


def sharing_objects(model: nn.Module) -> list[SharingStrategy]:
    """The sharing object of every patched model inside ``model`` (itself, or wrapped by peft or DDP): the
    copy in use when peft's modules_to_save wraps it."""
    found: list[SharingStrategy] = []
    for module in model.modules():
        if isinstance(module, EmbtieModelMixin):
            sharing = active_sharing(module.embtie_sharing)
            if all(sharing is not s for s in found):
                found.append(sharing)
    return found


class EmbtieCallback(TrainerCallback):
    """Calls ``on_train_step(step, total, optimizer)`` of the patched model's sharing object before every
    optimizer step of a transformers ``Trainer``. Refused, each with a one-line ConfigError naming the
    callback: a model with no embtie sharing object; a training whose ``max_steps`` is outside
    ``train.max_steps``' range (``schema.TRAINING_STEPS``, checked at the start of training); a
    step before ``on_train_begin`` ran (the callback added after training began, or called by hand); and
    what ``on_train_step`` refuses (``embtie.sharing.step_call``: a step outside the training, no optimizer
    or another model's for tie-untie)."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        """the steps the hook ran at (for checks and logs)."""
        self.began = False
        """whether ``on_train_begin`` has run (a step before it has no training to belong to)."""

    def on_train_begin(self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kwargs: Any):
        if model is None or not sharing_objects(model):
            raise ConfigError(
                "EmbtieCallback needs a model patched by embtie.hf.apply (or loaded with embtie.hf.load); "
                "this Trainer's model has no embtie sharing object: drop the callback or apply a strategy"
            )
        check(state.max_steps, int, "EmbtieCallback: the Trainer's max_steps", TRAINING_STEPS)
        self.began = True

    def on_step_begin(
        self, args: Any, state: Any, control: Any, model: nn.Module | None = None, optimizer: Any = None, **kwargs: Any
    ):
        if not self.began:
            raise ConfigError(
                f"EmbtieCallback.on_step_begin ran at step {state.global_step} before on_train_begin: pass the "
                "callback to Trainer(callbacks=[EmbtieCallback()]) before trainer.train(), not after training began"
            )
        if model is None:
            raise ConfigError("EmbtieCallback.on_step_begin got no model: the Trainer passes its model; call it so")
        for sharing in sharing_objects(model):
            try:
                sharing.on_train_step(state.global_step, state.max_steps, optimizer)
            except ConfigError as e:  # the Trainer made the call: say so, keep the line
                raise ConfigError(f"EmbtieCallback at the Trainer's step {state.global_step}: {e}") from None
        self.calls.append(state.global_step)


class FiniteCallback(TrainerCallback):
    """Stops a transformers ``Trainer`` on the first step after which a strategy's output matrix is not finite
    (a non-finite loss or gradient reaches every weight of the matrix in that step), as ``embtie train`` stops:
    a NonFiniteError naming the strategy, the step and the fix, never a model of NaN trained to the end."""

    def on_step_end(self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kwargs: Any):
        import torch

        from embtie.errors import NonFiniteError

        assert model is not None
        for sharing in sharing_objects(model):
            if not bool(torch.isfinite(sharing.weight).all()):
                raise NonFiniteError(
                    f"strategy {sharing.name}: the weights are not finite after step {state.global_step} (the loss "
                    f"or its gradient diverged): lower the learning rate (now {args.learning_rate:g}) or the "
                    "warmup's peak, then train again"
                )
