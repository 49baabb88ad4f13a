"""The LSTM language model of Zaremba et al. (2014) as Press & Wolf (2016) used it.

    x = dropout(sharing.embed(ids))                (B, T, d_emb)
    y, state = LSTM(x, state)                       n_layers x hidden, dropout between layers
    h = proj(dropout(y))                            (B, T, d_emb); proj only when hidden != d_emb
    loss = sharing.loss(h, targets)                 computed by the task, never here

Every weight of the model (LSTM matrices and biases, projection) is initialised uniformly in
[-init_range, init_range]; give the strategy the same init with ``sharing.options.init_range``.
The hidden state is carried from one batch to the next (truncated BPTT): the model is ``stateful``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, ClassVar, cast

import torch
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.models.base import ModelConfig
from embtie.models.language_model import LanguageModel
from embtie.models.registry import register
from embtie.schema import LAYER_COUNT, Setting
from embtie.sharing.base import SharingStrategy

LSTMState = tuple[Tensor, Tensor]
"""(h, c), each (n_layers, B, hidden)."""


@dataclass
class LSTMConfig(ModelConfig):
    """Shape and initialisation of the LSTM LM (defaults: Zaremba's small model)."""

    name: str = "lstm"
    emb_dim: Annotated[int, Setting("embedding width (= the strategy's dim)", ge=1)] = 200
    hidden: Annotated[
        int, Setting("LSTM width (a projection to emb_dim feeds the output layer when it differs)", ge=1)
    ] = 200
    n_layers: Annotated[int, replace(LAYER_COUNT, help="LSTM layers")] = 2
    dropout: Annotated[
        float,
        Setting("on the embeddings, between layers and on the output (Zaremba's medium/large: 0.5/0.65)", ge=0, lt=1),
    ] = 0.0
    init_range: Annotated[float, Setting("uniform init in [-init_range, init_range] of every model weight", gt=0)] = 0.1

    @property
    def embedding_dim(self) -> int:
        return self.emb_dim


@register("lstm", LSTMConfig)
class LSTMLM(LanguageModel):
    """``forward(ids (B, T), state) -> (h (B, T, d_emb), state)``; ``init_state(B)`` gives zeros."""

    stateful: ClassVar[bool] = True

    def __init__(self, config: LSTMConfig, sharing: SharingStrategy) -> None:
        super().__init__()
        if sharing.dim != config.emb_dim:
            raise ConfigError(f"sharing strategy width {sharing.dim} != model.emb_dim={config.emb_dim}")
        self.config = config
        self.sharing = sharing
        self.drop = nn.Dropout(config.dropout) if config.dropout > 0 else nn.Identity()
        self.lstm = nn.LSTM(
            config.emb_dim,
            config.hidden,
            num_layers=config.n_layers,
            dropout=config.dropout if config.n_layers > 1 else 0.0,
            batch_first=True,
        )
        self.proj = nn.Linear(config.hidden, config.emb_dim) if config.hidden != config.emb_dim else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        a = self.config.init_range
        mods = [self.lstm] + ([self.proj] if self.proj is not None else [])
        for m in mods:
            for p in m.parameters():
                nn.init.uniform_(p, -a, a)

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> LSTMState:
        """Zero (h, c), each (n_layers, batch_size, hidden)."""
        shape = (self.config.n_layers, batch_size, self.config.hidden)
        w = cast(Tensor, self.lstm.weight_ih_l0)
        return (w.new_zeros(shape, device=device), w.new_zeros(shape, device=device))

    def forward(self, ids: Tensor, state: LSTMState | None = None) -> tuple[Tensor, LSTMState]:
        """ids: (B, T) long; state: (h, c) or None (zeros) -> (h: (B, T, d_emb), new state)."""
        if state is None:
            state = self.init_state(ids.shape[0], ids.device)
        x = self.drop(self.sharing.embed(ids))
        y, state = self.lstm(x, state)
        y = self.drop(y)
        if self.proj is not None:
            y = self.proj(y)
        return y, state
