"""Show and Tell (Vinyals et al. 2015): the image embedding is the LSTM's first input.

    x_{-1} = W_I f            (f: the pooled image feature (B, C); W_I: C -> d)
    x_t = embed(w_t)          (t >= 0, w_0 = <s>; ``sharing.embed``)
    m_t = LSTM(x_t, m_{t-1})
    h_t = W_o dropout(m_t)    (B, d) -> logits through the sharing object

The image is shown once, before <s>. Training runs the whole sequence through ``nn.LSTM``; decoding
steps the same LSTM one word at a time, which gives the same hidden states.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

import torch
from torch import Tensor, nn

from embtie.models.base import ModelConfig
from embtie.models.captioner import Captioner
from embtie.models.registry import register
from embtie.models.seq2seq import DecodingState
from embtie.schema import LAYER_COUNT, Setting
from embtie.sharing.base import SharingStrategy


@dataclass
class ShowTellConfig(ModelConfig):
    """Sizes of the Show-and-Tell captioner."""

    name: str = "show-tell"
    dim: Annotated[int, Setting("word embedding width d (and the width of h fed to the output layer)", ge=1)] = 512
    hidden: Annotated[int, Setting("LSTM width", ge=1)] = 512
    layers: Annotated[int, replace(LAYER_COUNT, help="LSTM layers")] = 1
    feature_dim: Annotated[int, Setting("C, the width of the image features (1280 for EfficientNet-Lite0)", ge=1)] = (
        1280
    )
    dropout: Annotated[float, Setting("dropout on the embeddings and the LSTM output", ge=0, lt=1)] = 0.5

    @property
    def embedding_dim(self) -> int:
        return self.dim


@register("show-tell", ShowTellConfig)
class ShowTell(Captioner):
    """Image embedding as the first LSTM input; word embedding and output layer from ``sharing``."""

    feature_kind = "pooled"

    def __init__(self, config: ShowTellConfig, sharing: SharingStrategy) -> None:
        super().__init__(sharing)
        self.config = c = config
        self.image_embed = nn.Linear(c.feature_dim, c.dim)
        self.lstm = nn.LSTM(c.dim, c.hidden, num_layers=c.layers, batch_first=True,
                            dropout=c.dropout if c.layers > 1 else 0.0)  # fmt: skip
        self.out = nn.Linear(c.hidden, c.dim)
        self.drop = nn.Dropout(c.dropout)

    def _image_input(self, feats: Tensor) -> Tensor:
        """(B, C) -> (B, 1, d) the first LSTM input."""
        return self.drop(self.image_embed(feats.to(self.image_embed.weight.dtype))).unsqueeze(1)

    def forward(self, feats: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """feats (B, C), tgt_in (B, T) -> (h (B, T, d), zero penalty)."""
        x = self.drop(self.sharing.embed(tgt_in))
        m, _ = self.lstm(torch.cat([self._image_input(feats).to(x.dtype), x], dim=1))
        return self.out(self.drop(m[:, 1:])), m.new_zeros(())

    def begin(self, feats: Tensor) -> DecodingState:
        _, (h, c) = self.lstm(self._image_input(feats))
        return {"h": h.transpose(0, 1), "c": c.transpose(0, 1)}  # (B, layers, H): batch first for beams

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        x = self.drop(self.sharing.embed(prev)).unsqueeze(1)
        hc = (state["h"].transpose(0, 1).contiguous(), state["c"].transpose(0, 1).contiguous())
        m, (h, c) = self.lstm(x, hc)
        return self.out(self.drop(m[:, 0])), {"h": h.transpose(0, 1), "c": c.transpose(0, 1)}
