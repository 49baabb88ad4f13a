"""The optimizer settings of the vocabulary tables: the input embedding and a separate output head each get
their own peak learning rate, Adam betas and weight decay (modded-nanogpt's ``param_table``; OLMo 2 drops
weight decay on embeddings).

Rules:
- the input tables (E, a separate encoder embedding, adaptive's cluster tables) take ``train.embedding_*``;
- a separate learned head O (``VocabularyTables.head_tables``: untied, tie-untie) takes ``train.head_*``,
  each of which defaults to its ``embedding_*`` value;
- a shared (tied) matrix is one table that is both: it takes the ``embedding_*`` settings. Setting a
  ``head_*`` key for a model without a separate head is refused (``TrainConfig.check_head``, when the
  config is read and again when the groups are made), since it would silently apply to nothing.

A learning rate is kept as a multiple of ``train.lr`` (``lr_mult``), so every schedule drives it.
"""

from __future__ import annotations

from dataclasses import dataclass

from embtie.config import TrainConfig
from embtie.schema import Setting, check, check_as

LR_MULT = Setting("a table's peak lr as a multiple of train.lr (train.embedding_lr / train.lr, ...)", gt=0)
"""The range of ``lr_mult``: a ratio of two learning rates each in (0, 100], so not ``train.lr``'s own range
(an embedding lr of 0.3 over a body's 1e-3 is 300); unbounded above but for the magnitude every number
without a bound has (``embtie.schema``)."""


@dataclass(frozen=True)
class TableSettings:
    """One kind of table's optimizer settings: weight decay, peak lr as a multiple of train.lr, betas
    (None: the optimizer's own). Made from Python (``param_groups(head=...)``), each is checked with the
    range of the config key it stands for (``train.embedding_weight_decay``, ``train.betas``; the multiplier
    ``LR_MULT``): a one-line ConfigError, never a value the optimizer would take silently."""

    weight_decay: float = 0.0
    lr_mult: float = 1.0
    betas: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        wd = check_as(TrainConfig, "embedding_weight_decay", self.weight_decay, "TableSettings.weight_decay", float)
        mult = check(self.lr_mult, float, "TableSettings.lr_mult", LR_MULT)
        betas = self.betas
        if betas is not None:
            betas = tuple(check_as(TrainConfig, "betas", list(_sequence(betas)), "TableSettings.betas"))
        object.__setattr__(self, "weight_decay", wd)  # frozen: the checked (converted) values
        object.__setattr__(self, "lr_mult", mult)
        object.__setattr__(self, "betas", betas)

    def group_keys(self) -> dict[str, object]:
        """The keys a parameter group of these tables carries besides its parameters (``lr_mult`` and
        ``betas`` only when they differ from the optimizer's)."""
        keys: dict[str, object] = {"weight_decay": self.weight_decay}
        if self.lr_mult != 1.0:
            keys["lr_mult"] = self.lr_mult
        if self.betas is not None:
            keys["betas"] = self.betas
        return keys


def _sequence(values: object) -> list[object]:
    """A list or tuple as a list; anything else as one element (which the declared length then refuses)."""
    return list(values) if isinstance(values, list | tuple) else [values]


def _pair(values: list[float] | None) -> tuple[float, float] | None:
    return None if values is None else (float(values[0]), float(values[1]))


def table_settings(cfg: TrainConfig) -> tuple[TableSettings, TableSettings]:
    """(input tables, separate head) settings of ``cfg``; each head setting defaults to the embedding's."""
    emb_lr = cfg.lr if cfg.embedding_lr is None else cfg.embedding_lr
    emb = TableSettings(cfg.embedding_weight_decay, emb_lr / cfg.lr, _pair(cfg.embedding_betas))
    head = TableSettings(
        emb.weight_decay if cfg.head_weight_decay is None else cfg.head_weight_decay,
        (emb_lr if cfg.head_lr is None else cfg.head_lr) / cfg.lr,
        emb.betas if cfg.head_betas is None else _pair(cfg.head_betas),
    )
    return emb, head
