"""Encoder-decoder Transformer for translation (Vaswani et al.; fairseq's ``transformer`` family).

Pre- or post-norm, scaled-dot-product attention (``F.scaled_dot_product_attention``), sinusoidal
positions, and incremental decoding that caches the decoder's self-attention keys/values and the
cross-attention keys/values of the encoder output. The embeddings (and the output layer) are the
sharing objects passed in; see ``embtie.models.seq2seq``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Annotated, Any, Protocol, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.models.base import ModelConfig
from embtie.models.registry import register
from embtie.models.seq2seq import DecodingState, Seq2Seq, SourceEmbedding
from embtie.schema import LAYER_COUNT, Setting
from embtie.sharing.base import SharingStrategy


@dataclass
class TransformerMTConfig(ModelConfig):
    """Sizes and regularization of the Transformer (defaults: fairseq ``transformer_iwslt_de_en``)."""

    name: str = "transformer"

    dim: Annotated[int, Setting("model width d (= embedding width); heads must divide it", ge=1)] = 512
    enc_layers: Annotated[int, replace(LAYER_COUNT, help="encoder layers")] = 6
    dec_layers: Annotated[int, replace(LAYER_COUNT, help="decoder layers")] = 6
    heads: Annotated[int, Setting("attention heads", ge=1)] = 4
    ffn_dim: Annotated[int, Setting("width of the feed-forward layers", ge=1)] = 1024
    dropout: Annotated[float, Setting("dropout on embeddings and residual branches", ge=0, lt=1)] = 0.3
    attn_dropout: Annotated[float, Setting("dropout on the attention weights", ge=0, lt=1)] = 0.0
    act_dropout: Annotated[float, Setting("dropout after the FFN activation", ge=0, lt=1)] = 0.0
    pre_norm: Annotated[
        bool, Setting("LayerNorm before each sublayer (+ a final one) instead of after the residual sum")
    ] = False
    max_positions: Annotated[int, Setting("longest source or target sequence (sinusoidal positions)", ge=1)] = 1024

    @property
    def embedding_dim(self) -> int:
        return self.dim

    def check(self) -> None:
        if self.dim % self.heads:
            raise ConfigError(f"model.dim={self.dim} must be divisible by model.heads={self.heads}")


def sinusoidal_positions(n: int, dim: int) -> Tensor:
    """(n, dim) fixed sinusoidal position vectors (sin in the first half, cos in the second)."""
    half = dim // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float32) * -(math.log(10000.0) / max(half - 1, 1)))
    ang = torch.arange(n, dtype=torch.float32).unsqueeze(1) * freq.unsqueeze(0)
    pe = torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)
    if dim % 2:
        pe = F.pad(pe, (0, 1))
    return pe


class Attention(nn.Module):
    """Multi-head attention; ``heads`` heads of width dim/heads, computed with SDPA."""

    def __init__(self, dim: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        for lin in (self.q, self.k, self.v):
            nn.init.xavier_uniform_(lin.weight, gain=2**-0.5)
        nn.init.xavier_uniform_(self.o.weight)
        nn.init.zeros_(self.o.bias)

    def split(self, x: Tensor) -> Tensor:
        """(B, L, d) -> (B, H, L, d/H)."""
        return x.unflatten(-1, (self.heads, -1)).transpose(1, 2)

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values of x (B, L, d), each (B, H, L, d/H)."""
        return self.split(self.k(x)), self.split(self.v(x))

    def attend(self, x: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """Queries from x (B, L, d) against k, v (B, H, S, d/H); mask (B, S) True = may attend."""
        q = self.split(self.q(x))
        attn_mask = None if mask is None else mask[:, None, None, :]
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, dropout_p=self.dropout if self.training else 0.0, is_causal=causal
        )
        return self.o(y.transpose(1, 2).flatten(2))


class FeedForward(nn.Module):
    def __init__(self, dim: int, ffn_dim: int, act_dropout: float) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, dim)
        self.drop = nn.Dropout(act_dropout)
        for lin in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.drop(F.relu(self.fc1(x))))


class Residual(nn.Module):
    """x + dropout(f(x)) with a LayerNorm before f (pre-norm) or after the sum (post-norm)."""

    def __init__(self, dim: int, dropout: float, pre_norm: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)
        self.pre_norm = pre_norm

    def forward(self, x: Tensor, f: Callable[[Tensor], Tensor]) -> Tensor:
        if self.pre_norm:
            return x + self.drop(f(self.norm(x)))
        return self.norm(x + self.drop(f(x)))


class EncoderLayer(nn.Module):
    def __init__(self, c: TransformerMTConfig) -> None:
        super().__init__()
        self.attn = Attention(c.dim, c.heads, c.attn_dropout)
        self.ffn = FeedForward(c.dim, c.ffn_dim, c.act_dropout)
        self.r1 = Residual(c.dim, c.dropout, c.pre_norm)
        self.r2 = Residual(c.dim, c.dropout, c.pre_norm)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = self.r1(x, lambda y: self.attn.attend(y, *self.attn.project_kv(y), mask=mask))
        return self.r2(x, self.ffn)


def _append(cache: Tensor, new: Tensor, index: Tensor | None) -> Tensor:
    """cache (B', H, t, dh) with rows ``index`` (B,) selected (None: all, B' = B), then new (B, H, 1, dh)
    appended along time -> (B, H, t + 1, dh); one copy of the cache either way."""
    if index is None:
        return torch.cat([cache, new], dim=2)
    _, h, t, dh = cache.shape
    out = cache.new_empty((index.numel(), h, t + new.shape[2], dh))
    torch.index_select(cache, 0, index, out=out[:, :, :t])
    out[:, :, t:] = new
    return out


class DecoderLayer(nn.Module):
    def __init__(self, c: TransformerMTConfig) -> None:
        super().__init__()
        self.self_attn = Attention(c.dim, c.heads, c.attn_dropout)
        self.cross_attn = Attention(c.dim, c.heads, c.attn_dropout)
        self.ffn = FeedForward(c.dim, c.ffn_dim, c.act_dropout)
        self.r1 = Residual(c.dim, c.dropout, c.pre_norm)
        self.r2 = Residual(c.dim, c.dropout, c.pre_norm)
        self.r3 = Residual(c.dim, c.dropout, c.pre_norm)

    def forward(
        self, x: Tensor, mem_k: Tensor, mem_v: Tensor, mem_mask: Tensor, cache: dict[str, Any] | None = None
    ) -> Tensor:
        """x (B, T, d). Without cache: causal self-attention over x. With cache (incremental, T = 1):
        this position's keys/values are appended to cache["k"], cache["v"] (B, H, t, d/H)."""

        def self_attention(y: Tensor) -> Tensor:
            k, v = self.self_attn.project_kv(y)
            if cache is None:
                # causal at every T (at T = 1 the mask keeps the one key): no test of T, which torch.compile
                # traces as a symbol when batches differ in length, and SDPA takes no symbolic bool
                return self.self_attn.attend(y, k, v, causal=True)
            if "k" in cache:
                k = _append(cache["k"], k, cache.get("index"))
                v = _append(cache["v"], v, cache.get("index"))
            cache["k"], cache["v"] = k, v
            return self.self_attn.attend(y, k, v)

        def cross_attention(y: Tensor) -> Tensor:
            g = y.shape[0] // mem_k.shape[0]  # decoding rows per source row (beams; 1 outside beam search)
            if g == 1:
                return self.cross_attn.attend(y, mem_k, mem_v, mask=mem_mask)
            # the g consecutive rows of a source row attend to its memory once, as g query positions
            b, t, d = y.shape
            return self.cross_attn.attend(y.reshape(b // g, g * t, d), mem_k, mem_v, mask=mem_mask).reshape(b, t, d)

        x = self.r1(x, self_attention)
        x = self.r2(x, cross_attention)
        return self.r3(x, self.ffn)


class CrossAttendingLayer(Protocol):
    """A decoder layer of ``SinusoidalSeq2Seq``: ``layer(x, mem_k, mem_v, mem_mask) -> x`` over a whole
    target prefix, reading the source through its ``cross_attn``."""

    cross_attn: Attention

    def __call__(self, x: Tensor, mem_k: Tensor, mem_v: Tensor, mem_mask: Tensor) -> Tensor: ...


class SinusoidalSeq2Seq(Seq2Seq):
    """The frame the Transformer and the convolutional models (``embtie.models.conv_mt``) share: fixed
    sinusoidal positions added to the (dropped-out) embeddings, encoder layers ``layer(x, mask)`` and a
    final norm, decoder layers (``CrossAttendingLayer``) and a final norm. Subclasses build the layers."""

    encoder: nn.ModuleList
    decoder: nn.ModuleList
    enc_norm: nn.Module
    dec_norm: nn.Module
    drop: nn.Dropout
    positions: Tensor
    """(max_positions, d) the sinusoidal table, a non-persistent buffer."""

    @property
    def max_positions(self) -> int:
        """The rows of the position table."""
        return int(self.positions.shape[0])

    def decoder_layers(self) -> list[CrossAttendingLayer]:
        return cast(list[CrossAttendingLayer], list(self.decoder))

    def _embed(self, embedder: SourceEmbedding, ids: Tensor, offset: int = 0) -> Tensor:
        """(embedder, ids (B, T), offset) -> dropout(embed(ids) + positions) (B, T, d)."""
        n = ids.shape[1]
        if offset + n > self.max_positions:
            raise ConfigError(
                f"sequence of {offset + n} tokens exceeds max_positions={self.max_positions}; "
                "raise model.max_positions or shorten the input"
            )
        x = embedder.embed(ids)
        return self.drop(x + self.positions[offset : offset + n].to(x.dtype))

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S) -> (memory (B, S, d), mask (B, S) True at real tokens)."""
        mask = self.source_mask(src)
        x = self._embed(self.src_embed, src)
        for layer in self.encoder:
            x = layer(x, mask)
        return self.enc_norm(x), mask

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src (B, S), tgt_in (B, T) -> h (B, T, d), every decoder layer over the whole prefix."""
        memory, mask = self.encode(src)
        x = self._embed(self.sharing, tgt_in)
        for layer in self.decoder_layers():
            x = layer(x, *layer.cross_attn.project_kv(memory), mask)
        out: Tensor = self.dec_norm(x)
        return out


@register("transformer", TransformerMTConfig)
class TransformerMT(SinusoidalSeq2Seq):
    """Encoder-decoder Transformer. ``sharing``: the decoder's strategy; ``src_embed``: object with
    ``embed(ids)`` for the encoder (None: ``sharing`` itself, three-way tying)."""

    source_state_keys = ("mask", "mem_k", "mem_v")

    def __init__(
        self, config: TransformerMTConfig, sharing: SharingStrategy, src_embed: SourceEmbedding | None = None
    ) -> None:
        super().__init__(sharing, src_embed)
        self.config = c = config
        self.encoder = nn.ModuleList(EncoderLayer(c) for _ in range(c.enc_layers))
        self.decoder = nn.ModuleList(DecoderLayer(c) for _ in range(c.dec_layers))
        self.enc_norm = nn.LayerNorm(c.dim) if c.pre_norm else nn.Identity()
        self.dec_norm = nn.LayerNorm(c.dim) if c.pre_norm else nn.Identity()
        self.drop = nn.Dropout(c.dropout)
        self.register_buffer("positions", sinusoidal_positions(c.max_positions, c.dim), persistent=False)

    def start(self, src: Tensor) -> DecodingState:
        memory, mask = self.encode(src)
        kv = [layer.cross_attn.project_kv(memory) for layer in self.decoder_layers()]
        return {
            # additive float mask, converted once here rather than by SDPA at every step
            "mask": torch.zeros(mask.shape, dtype=memory.dtype, device=mask.device).masked_fill(~mask, float("-inf")),
            "mem_k": [k for k, _ in kv],
            "mem_v": [v for _, v in kv],
            "self_k": [],
            "self_v": [],
            "pos": 0,
        }

    def reorder_state(self, state: DecodingState, index: Tensor) -> DecodingState:
        """Select decoding rows ``index``; the source entries stay one row per source sentence.

        Row r decodes source row r // state["beams"]. When the selected rows again come in equal
        consecutive groups per source row (beam search: expanding to k beams, dropping finished
        sentences) only the kept source rows are selected, and cross-attention reads each source
        row's memory once for its whole group; otherwise the source entries are expanded per row.
        """
        if "mem_k" not in state:  # beam search's fast path: only the decoder's own entries
            # kept pending and applied by the next step together with its cache append (one copy, not two)
            pending = state.get("reorder")
            return {**state, "reorder": index if pending is None else pending.index_select(0, index)}
        if "reorder" in state:
            state = self._apply_reorder(state)
        g = state.get("beams", 1)
        src = index // g if g > 1 else index
        rest = super().reorder_state({k: v for k, v in state.items() if k not in self.source_state_keys}, index)
        n = index.numel()
        n_src = state["mask"].shape[0]
        for beams in dict.fromkeys((g, n // n_src if n % n_src == 0 else 1)):
            if beams > 1 and n % beams == 0:
                groups = src.view(-1, beams)
                if bool((groups == groups[:, :1]).all()):
                    src, rest["beams"] = groups[:, 0], beams
                    break
        else:
            rest["beams"] = 1
        if not torch.equal(src, torch.arange(n_src, device=src.device)):
            src_state = {k: state[k] for k in self.source_state_keys}
            rest.update(super().reorder_state(src_state, src))
        else:
            rest.update({k: state[k] for k in self.source_state_keys})
        return rest

    def _apply_reorder(self, state: DecodingState) -> DecodingState:
        """The state with its pending row selection (``reorder_state``'s fast path) applied."""
        index = state["reorder"]
        state = {k: v for k, v in state.items() if k != "reorder"}
        state["self_k"] = [t.index_select(0, index) for t in state["self_k"]]
        state["self_v"] = [t.index_select(0, index) for t in state["self_v"]]
        return state

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        pos = state["pos"]
        index = state.get("reorder")
        if index is not None:
            state = {k: v for k, v in state.items() if k != "reorder"}
            if pos == 0:
                index = None
        x = self._embed(self.sharing, prev[:, None], offset=pos)
        new_k, new_v = [], []
        for i, layer in enumerate(self.decoder):
            cache: dict[str, Tensor | None] = (
                {"k": state["self_k"][i], "v": state["self_v"][i], "index": index} if pos > 0 else {}
            )
            x = layer(x, state["mem_k"][i], state["mem_v"][i], state["mask"], cache=cache)
            new_k.append(cache["k"])
            new_v.append(cache["v"])
        state = {**state, "self_k": new_k, "self_v": new_v, "pos": pos + 1}
        return self.dec_norm(x)[:, 0], state
