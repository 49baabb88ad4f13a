"""Show, Attend and Tell (Xu et al. 2015): an LSTM with soft attention over the image's feature grid.

With a = (a_1 .. a_L) the spatial features (B, L, C) of an image (7 x 7 = 49 cells of C = 1280 for
EfficientNet-Lite0), per output step t:

    h_0 = tanh(W_h0 mean_i a_i),  c_0 = W_c0 mean_i a_i                  (init from the mean feature)
    e_ti = v . tanh(W_a a_i + W_q h_{t-1}),  alpha_t = softmax_i(e_t)    (soft attention)
    beta_t = sigmoid(w_b . h_{t-1} + b_b)                                 (gating scalar)
    z_t = beta_t sum_i alpha_ti a_i
    h_t, c_t = LSTM([embed(y_{t-1}); z_t], (h_{t-1}, c_{t-1}))
    out_t = embed(y_{t-1}) + L_h dropout(h_t) + L_z z_t                   (B, d): Xu's deep output

and the logits are ``sharing.logits(out_t)`` (Xu's L_o is the sharing object's output layer). Training
adds the doubly stochastic regularisation lambda * sum_i (1 - sum_t alpha_ti)^2 (summed over cells,
averaged over images; only real target positions t count): ``doubly_stochastic``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import torch
from torch import Tensor, nn

from embtie.data.subwords import PAD
from embtie.models.base import ModelConfig
from embtie.models.captioner import Captioner
from embtie.models.registry import register
from embtie.models.seq2seq import DecodingState
from embtie.schema import Setting
from embtie.sharing.base import SharingStrategy


@dataclass
class ShowAttendTellConfig(ModelConfig):
    """Sizes of the Show-Attend-Tell captioner."""

    name: str = "show-attend-tell"
    dim: Annotated[int, Setting("word embedding width d (and of the deep output fed to the output layer)", ge=1)] = 512
    hidden: Annotated[int, Setting("LSTM width", ge=1)] = 512
    attn_dim: Annotated[int, Setting("width of the attention over the grid cells", ge=1)] = 512
    feature_dim: Annotated[
        int, Setting("C, the width of each grid cell's feature (1280 for EfficientNet-Lite0)", ge=1)
    ] = 1280
    dropout: Annotated[float, Setting("dropout before the deep output", ge=0, lt=1)] = 0.5
    attention_reg: Annotated[
        float,
        Setting(
            "lambda of the doubly stochastic term, summed over the L cells (0.02 ~ 1/49: a mean over a 7 x 7 "
            "grid with weight 1)",
            ge=0,
        ),
    ] = 0.02

    @property
    def embedding_dim(self) -> int:
        return self.dim


def doubly_stochastic(alphas: Tensor, mask: Tensor, lam: float) -> Tensor:
    """lambda * mean_b sum_i (1 - sum_t mask_bt alpha_bti)^2; alphas (B, T, L), mask (B, T) bool -> scalar."""
    total = (alphas * mask.unsqueeze(-1).to(alphas.dtype)).sum(1)  # (B, L)
    return lam * ((1.0 - total) ** 2).sum(1).mean()


@register("show-attend-tell", ShowAttendTellConfig)
class ShowAttendTell(Captioner):
    """Soft attention over the spatial grid with a gating scalar; embedding and output from ``sharing``."""

    feature_kind = "spatial"
    source_state_keys = ("feats", "keys")

    def __init__(self, config: ShowAttendTellConfig, sharing: SharingStrategy) -> None:
        super().__init__(sharing)
        self.config = c = config
        self.init_h = nn.Linear(c.feature_dim, c.hidden)
        self.init_c = nn.Linear(c.feature_dim, c.hidden)
        self.w_a = nn.Linear(c.feature_dim, c.attn_dim, bias=False)
        self.w_q = nn.Linear(c.hidden, c.attn_dim)
        self.v = nn.Linear(c.attn_dim, 1, bias=False)
        self.gate = nn.Linear(c.hidden, 1)
        self.cell = nn.LSTMCell(c.dim + c.feature_dim, c.hidden)
        self.l_h = nn.Linear(c.hidden, c.dim)
        self.l_z = nn.Linear(c.feature_dim, c.dim, bias=False)
        self.drop = nn.Dropout(c.dropout)

    def begin(self, feats: Tensor) -> DecodingState:
        """feats (B, L, C) -> state: feats, keys (B, L, A), h and c (B, H)."""
        a = feats.to(self.w_a.weight.dtype)
        mean = a.mean(1)
        return {"feats": a, "keys": self.w_a(a), "h": torch.tanh(self.init_h(mean)), "c": self.init_c(mean)}

    def attend(self, h: Tensor, state: DecodingState) -> tuple[Tensor, Tensor]:
        """h (B, H) -> (gated context z (B, C), attention weights alpha (B, L), each row summing to 1)."""
        scores = self.v(torch.tanh(state["keys"] + self.w_q(h).unsqueeze(1))).squeeze(-1)
        alpha = torch.softmax(scores.float(), dim=-1).to(state["feats"].dtype)
        ctx = torch.bmm(alpha.unsqueeze(1), state["feats"]).squeeze(1)
        return torch.sigmoid(self.gate(h)) * ctx, alpha

    def _recur(self, y_in: Tensor, state: DecodingState) -> tuple[Tensor, Tensor, DecodingState]:
        """One step of the recurrence: y_in (B, d) the (dropped-out) previous word's vector ->
        (context z (B, C), attention weights (B, L), state with the new h and c)."""
        z, alpha = self.attend(state["h"], state)
        h, c = self.cell(torch.cat([y_in, z.to(y_in.dtype)], dim=-1), (state["h"], state["c"]))
        return z, alpha, {**state, "h": h, "c": c}

    def _deep_output(self, y: Tensor, h: Tensor, z: Tensor) -> Tensor:
        """Xu's deep output, (..., d) from y (..., d), h (..., H), z (..., C)."""
        return self.drop(y + self.l_h(self.drop(h)) + self.l_z(z.to(y.dtype)))

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        y = self.sharing.embed(prev)
        z, _, state = self._recur(self.drop(y), state)
        return self._deep_output(y, state["h"], z), state

    def run(self, feats: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher forcing: feats (B, L, C), tgt_in (B, T) -> (h (B, T, d), attention weights (B, T, L)).

        ``step`` applied T times, except that only the recurrence runs per position: the word vectors,
        their dropout and the deep output are computed for all T positions at once."""
        state = self.begin(feats)
        y = self.sharing.embed(tgt_in)  # (B, T, d)
        y_in = self.drop(y)
        hs, zs, alphas = [], [], []
        for t in range(tgt_in.shape[1]):
            z, alpha, state = self._recur(y_in[:, t], state)
            hs.append(state["h"])
            zs.append(z)
            alphas.append(alpha)
        return self._deep_output(y, torch.stack(hs, 1), torch.stack(zs, 1)), torch.stack(alphas, 1)

    def forward(self, feats: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """feats (B, L, C), tgt_in (B, T) -> (h (B, T, d), doubly stochastic penalty over real positions)."""
        h, alphas = self.run(feats, tgt_in)
        return h, doubly_stochastic(alphas, tgt_in != PAD, self.config.attention_reg)
