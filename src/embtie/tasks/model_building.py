"""One way to build a task's model from its run config.

The sharing object is ``sharing.build(cfg.sharing.name, vocab_size=V, dim=cfg.model.embedding_dim,
**cfg.sharing.options)`` with V the task's output vocabulary; the model is
``Model(cfg.model, sharing, **arguments)`` with the class ``model.name`` registers, the extra
arguments coming from the task (translation: the encoder's own embedding). Models take their sharing
object as a constructor argument and never look at its name.

The random numbers follow ``embtie.seeding``: the sharing object is drawn from the stream "sharing",
everything else (the extra arguments first, then the body) from the stream "body", so two strategies
trained with the same seed start from the same body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from torch import nn

from embtie import models, seeding, sharing
from embtie.sharing.base import SharingStrategy

if TYPE_CHECKING:
    from embtie.config import RunConfig

ModelArguments = Callable[[SharingStrategy], dict[str, Any]]
"""sharing object -> constructor arguments of the model besides (config, sharing)."""


def build_model(cfg: RunConfig, vocab_size: int, arguments: ModelArguments | None = None) -> nn.Module:
    """The model of ``cfg`` whose output layer has ``vocab_size`` rows, seeded by ``cfg.seed`` alone."""
    model_class = models.model_class(cfg.model.name)

    def build_sharing() -> SharingStrategy:
        return sharing.build(
            cfg.sharing.name, vocab_size=vocab_size, dim=cfg.model.embedding_dim, **cfg.sharing.options
        )

    def build_body(shared: SharingStrategy) -> nn.Module:
        extra = arguments(shared) if arguments is not None else {}
        return model_class(cfg.model, shared, **extra)

    return seeding.build_with_streams(cfg.seed, build_sharing, build_body)
