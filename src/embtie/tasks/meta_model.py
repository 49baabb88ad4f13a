"""A run's model built on the meta device: parameters with shapes and no storage (what ``embtie plan`` measures
and a comparison inspects before anything trains). The model is built the one way every run builds it
(``tasks.model_building``); a strategy that computes its fixed table from data while it is built (``hadamard``
searches its rows) cannot be built there: its sharing object alone is then built on the CPU (a V x d table),
the body still on the meta device.
"""

from __future__ import annotations

import torch
from torch import nn

from embtie import models, seeding, sharing
from embtie.config import RunConfig
from embtie.errors import ConfigError
from embtie.sharing.base import SharingStrategy
from embtie.tasks import Task
from embtie.tasks.model_building import build_model

FALLBACK_ELEMENTS = 2**28
"""the largest V x d table a strategy that cannot be built on the meta device is built with in memory (1 GiB
in float32): ``embtie plan`` must not allocate what it plans for."""


def build_on_meta(cfg: RunConfig, task: Task) -> nn.Module:
    """``cfg``'s model for ``task`` on the meta device (shapes, no storage); a strategy that reads its own
    tensors while it is built gets its sharing object on the CPU (at most FALLBACK_ELEMENTS), the body on meta."""
    try:
        with torch.device("meta"):
            return build_model(cfg, task.output_vocab_size(), task.model_arguments)
    except (RuntimeError, NotImplementedError) as e:  # a strategy that reads its own tensors while it is built
        if "overflow" in str(e):  # a tensor with more elements than an int64 counts
            raise ConfigError(
                f"this model (width {cfg.model.embedding_dim:,}) has a tensor too large for any machine ({e}); "
                "plan a smaller one"
            ) from None
    elements = task.output_vocab_size() * cfg.model.embedding_dim
    if elements > FALLBACK_ELEMENTS:
        raise ConfigError(
            f"strategy {cfg.sharing.name!r} builds its {task.output_vocab_size():,} x {cfg.model.embedding_dim:,} "
            f"table in memory ({elements * 4 / 2**30:.0f} GiB), and plan allocates nothing that large; plan it at "
            "a smaller width or vocabulary, or with another strategy"
        )
    model_class = models.model_class(cfg.model.name)

    def build_sharing() -> SharingStrategy:
        return sharing.build(
            cfg.sharing.name, vocab_size=task.output_vocab_size(), dim=cfg.model.embedding_dim, **cfg.sharing.options
        )

    def build_body(shared: SharingStrategy) -> nn.Module:
        with torch.device("meta"):
            return model_class(cfg.model, shared, **task.model_arguments(shared))

    return seeding.build_with_streams(cfg.seed, build_sharing, build_body)
