"""Bidirectional-LSTM encoder, LSTM decoder with additive (Bahdanau) attention.

The translation model of Shalev et al. (after Bahdanau et al. 2015). Per output step t:

    c_t = sum_s a_ts m_s,   a_t = softmax_s( v . tanh(W_k m_s + W_q s_{t-1}) )   (pads masked)
    s_t = LSTM(s_{t-1}, [embed(y_{t-1}); c_t])
    h_t = tanh(W_o [s_t; c_t])                                        (B, d)

with m the encoder outputs (B, S, 2H) and s the top decoder layer's state. ``h_t`` has the
embedding width d, so the decoder's sharing object turns it into logits (tying is possible).
Training runs the same ``step`` as incremental decoding, so both give identical hidden states.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from embtie.models.base import ModelConfig
from embtie.models.registry import register
from embtie.models.seq2seq import DecodingState, Seq2Seq, SourceEmbedding
from embtie.schema import LAYER_COUNT, Setting
from embtie.sharing.base import SharingStrategy


@dataclass
class RNNMTConfig(ModelConfig):
    """Sizes of the LSTM-attention model."""

    name: str = "rnn"

    dim: Annotated[int, Setting("embedding width d (decoder output width too)", ge=1)] = 256
    enc_hidden: Annotated[int, Setting("LSTM width of each encoder direction", ge=1)] = 256
    dec_hidden: Annotated[int, Setting("decoder LSTM width", ge=1)] = 512
    enc_layers: Annotated[int, replace(LAYER_COUNT, help="encoder (bidirectional LSTM) layers")] = 1
    dec_layers: Annotated[int, replace(LAYER_COUNT, help="decoder LSTM layers")] = 1
    attn_dim: Annotated[int, Setting("width of the additive attention", ge=1)] = 256
    dropout: Annotated[float, Setting("dropout on embeddings and between layers", ge=0, lt=1)] = 0.2

    @property
    def embedding_dim(self) -> int:
        return self.dim


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score_s = v . tanh(W_k m_s + W_q q)."""

    def __init__(self, mem_dim: int, query_dim: int, attn_dim: int) -> None:
        super().__init__()
        self.w_k = nn.Linear(mem_dim, attn_dim, bias=False)
        self.w_q = nn.Linear(query_dim, attn_dim)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def forward(self, query: Tensor, memory: Tensor, keys: Tensor, mask: Tensor) -> Tensor:
        """query (B, Dq), memory (B, S, Dm), keys = w_k(memory) (B, S, A), mask (B, S) -> context (B, Dm)."""
        scores = self.v(torch.tanh(keys + self.w_q(query).unsqueeze(1))).squeeze(-1)
        scores = scores.masked_fill(~mask, float("-inf"))
        return torch.bmm(torch.softmax(scores.float(), dim=-1).to(memory.dtype).unsqueeze(1), memory).squeeze(1)


@register("rnn", RNNMTConfig)
class RNNMT(Seq2Seq):
    """BiLSTM encoder + attentional LSTM decoder; embeddings and output layer passed in."""

    def __init__(self, config: RNNMTConfig, sharing: SharingStrategy, src_embed: SourceEmbedding | None = None) -> None:
        super().__init__(sharing, src_embed)
        self.config = c = config
        mem = 2 * c.enc_hidden
        self.encoder = nn.LSTM(
            c.dim,
            c.enc_hidden,
            num_layers=c.enc_layers,
            bidirectional=True,
            batch_first=True,
            dropout=c.dropout if c.enc_layers > 1 else 0.0,
        )
        self.init_h = nn.Linear(mem, c.dec_layers * c.dec_hidden)
        self.init_c = nn.Linear(mem, c.dec_layers * c.dec_hidden)
        self.attention = AdditiveAttention(mem, c.dec_hidden, c.attn_dim)
        self.cells = nn.ModuleList(
            nn.LSTMCell(c.dim + mem if i == 0 else c.dec_hidden, c.dec_hidden) for i in range(c.dec_layers)
        )
        self.out = nn.Linear(c.dec_hidden + mem, c.dim)
        self.drop = nn.Dropout(c.dropout)

    def start(self, src: Tensor) -> DecodingState:
        c = self.config
        mask = self.source_mask(src)
        lengths = mask.sum(1)
        x = self.drop(self.src_embed.embed(src))
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        memory, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True, total_length=src.shape[1])
        memory = self.drop(memory)
        mean = (memory * mask.unsqueeze(-1)).sum(1) / lengths.unsqueeze(-1).to(memory.dtype)
        b = src.shape[0]
        return {
            "memory": memory,
            "keys": self.attention.w_k(memory),
            "mask": mask,
            "h": torch.tanh(self.init_h(mean)).view(b, c.dec_layers, c.dec_hidden),
            "c": self.init_c(mean).view(b, c.dec_layers, c.dec_hidden),
        }

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        h_prev, c_prev = state["h"], state["c"]
        ctx = self.attention(h_prev[:, -1], state["memory"], state["keys"], state["mask"])
        x = torch.cat([self.drop(self.sharing.embed(prev)), ctx], dim=-1)
        hs, cs = [], []
        for i, cell in enumerate(self.cells):
            h, c = cell(x, (h_prev[:, i], c_prev[:, i]))
            hs.append(h)
            cs.append(c)
            x = self.drop(h)
        out = self.drop(torch.tanh(self.out(torch.cat([hs[-1], ctx], dim=-1))))
        return out, {**state, "h": torch.stack(hs, 1), "c": torch.stack(cs, 1)}

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        state = self.start(src)
        outs = []
        for t in range(tgt_in.shape[1]):
            h, state = self.step(tgt_in[:, t], state)
            outs.append(h)
        return torch.stack(outs, dim=1)
