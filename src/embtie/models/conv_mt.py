"""Lightweight- and dynamic-convolution encoder-decoders for translation (Wu et al. 2019; fairseq's
``lightconv`` architecture), registered as ``lightconv`` and ``dynamicconv``: one implementation, the
convolution picked by the class's ``dynamic`` flag.

Every block: Linear d -> 2C + GLU (C = d), padded source positions zeroed, the convolution
(``embtie.models.conv_ops``: encoder padding symmetric, decoder causal), Linear C -> d, residual; then
the FFN, residual. The LayerNorms sit as ``pre_norm`` says, as in the Transformer (fairseq's
``encoder_normalize_before``): after each residual sum (post-norm, fairseq's default) or before each
sublayer with a final LayerNorm (pre-norm). Decoder blocks add encoder-decoder attention between the
convolution and the FFN with the Transformer's own attention module. One layer per kernel width in
``enc_kernels`` / ``dec_kernels``.

Incremental decoding keeps, per decoder layer, the last K-1 inputs of its convolution (a window
(B, K-1, C)), so a step costs O(K) whatever the prefix length; ``reorder_state`` selects windows
for beam search. Embeddings and output layer are the sharing objects (see ``embtie.models.seq2seq``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.models.base import ModelConfig
from embtie.models.conv_ops import TimeConv, encoder_padding
from embtie.models.registry import register
from embtie.models.seq2seq import DecodingState, SourceEmbedding
from embtie.models.transformer_mt import Attention, FeedForward, Residual, SinusoidalSeq2Seq, sinusoidal_positions
from embtie.schema import Setting
from embtie.sharing.base import SharingStrategy


@dataclass
class LightConvMTConfig(ModelConfig):
    """Sizes and regularization (defaults: fairseq ``lightconv_iwslt_de_en``, post-norm)."""

    name: str = "lightconv"

    dim: Annotated[
        int, Setting("model width d (= embedding width = convolution channels C); heads must divide it", ge=1)
    ] = 512
    heads: Annotated[
        int, Setting("convolution heads H (kernel shared by the d/H channels of a head) and attention heads", ge=1)
    ] = 4
    ffn_dim: Annotated[int, Setting("width of the feed-forward layers", ge=1)] = 1024
    enc_kernels: Annotated[
        list[int],
        Setting("kernel width of each encoder layer (its length = number of encoder layers)", min_length=1, ge=1),
    ] = field(default_factory=lambda: [3, 7, 15, 31, 31, 31, 31])
    dec_kernels: Annotated[
        list[int],
        Setting("kernel width of each decoder layer (its length = number of decoder layers)", min_length=1, ge=1),
    ] = field(default_factory=lambda: [3, 7, 15, 31, 31, 31])
    dropout: Annotated[float, Setting("dropout on embeddings and residual branches", ge=0, lt=1)] = 0.3
    weight_dropout: Annotated[
        float, Setting("DropConnect on the softmax-normalised convolution kernels", ge=0, lt=1)
    ] = 0.1
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


@dataclass
class DynamicConvMTConfig(LightConvMTConfig):
    """As ``LightConvMTConfig``; the kernels are predicted from each time step's input."""

    name: str = "dynamicconv"


class ConvBlock(nn.Module):
    """Linear d -> 2C, GLU, (pads zeroed), lightweight/dynamic convolution, Linear C -> d (C = d)."""

    def __init__(self, c: LightConvMTConfig, kernel: int, dynamic: bool) -> None:
        super().__init__()
        self.inp = nn.Linear(c.dim, 2 * c.dim)
        self.conv = TimeConv(c.dim, c.heads, kernel, c.weight_dropout, dynamic)
        self.out = nn.Linear(c.dim, c.dim)
        for lin in (self.inp, self.out):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, x: Tensor, padding_l: int, mask: Tensor | None = None) -> Tensor:
        """x (B, T, d), mask (B, T) True at real positions (None: all real) -> (B, T, d)."""
        u = F.glu(self.inp(x), dim=-1)
        if mask is not None:  # pads are zeros before convolving: they never reach a real position
            u = u.masked_fill(~mask.unsqueeze(-1), 0.0)
        return self.out(self.conv(u, padding_l))

    def step(self, x: Tensor, window: Tensor) -> tuple[Tensor, Tensor]:
        """One causal position x (B, d), window (B, K-1, C) -> (output (B, d), next window)."""
        y, window = self.conv.step(F.glu(self.inp(x), dim=-1), window)
        return self.out(y), window


class EncoderLayer(nn.Module):
    def __init__(self, c: LightConvMTConfig, kernel: int, dynamic: bool) -> None:
        super().__init__()
        self.block = ConvBlock(c, kernel, dynamic)
        self.ffn = FeedForward(c.dim, c.ffn_dim, c.act_dropout)
        self.r1 = Residual(c.dim, c.dropout, c.pre_norm)
        self.r2 = Residual(c.dim, c.dropout, c.pre_norm)
        self.padding_l = encoder_padding(kernel)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """x (B, S, d), mask (B, S) True at real tokens -> (B, S, d)."""
        x = self.r1(x, lambda y: self.block(y, self.padding_l, mask))
        return self.r2(x, self.ffn)


def cross_attend(attn: Attention, y: Tensor, mem_k: Tensor, mem_v: Tensor, mem_mask: Tensor) -> Tensor:
    """Queries y (B, T, d) against the memory keys/values (B/g, H, S, d/H), mask (B/g, S): each run of
    g consecutive rows (beams of one sentence) reads its source row's memory once -> (B, T, d)."""
    g = y.shape[0] // mem_k.shape[0]
    if g == 1:
        return attn.attend(y, mem_k, mem_v, mask=mem_mask)
    b, t, d = y.shape
    return attn.attend(y.reshape(b // g, g * t, d), mem_k, mem_v, mask=mem_mask).reshape(b, t, d)


class DecoderLayer(nn.Module):
    def __init__(self, c: LightConvMTConfig, kernel: int, dynamic: bool) -> None:
        super().__init__()
        self.block = ConvBlock(c, kernel, dynamic)
        self.cross_attn = Attention(c.dim, c.heads, c.attn_dropout)
        self.ffn = FeedForward(c.dim, c.ffn_dim, c.act_dropout)
        self.r1 = Residual(c.dim, c.dropout, c.pre_norm)
        self.r2 = Residual(c.dim, c.dropout, c.pre_norm)
        self.r3 = Residual(c.dim, c.dropout, c.pre_norm)
        self.padding_l = kernel - 1  # causal

    def forward(self, x: Tensor, mem_k: Tensor, mem_v: Tensor, mem_mask: Tensor) -> Tensor:
        """The whole target prefix x (B, T, d) -> (B, T, d)."""
        x = self.r1(x, lambda y: self.block(y, self.padding_l))
        x = self.r2(x, lambda y: cross_attend(self.cross_attn, y, mem_k, mem_v, mem_mask))
        return self.r3(x, self.ffn)

    def step(self, x: Tensor, mem_k: Tensor, mem_v: Tensor, mem_mask: Tensor, window: Tensor) -> tuple[Tensor, Tensor]:
        """One position x (B, 1, d) and the convolution's window (B, K-1, C) -> ((B, 1, d), next window)."""
        new: list[Tensor] = []

        def conv(y: Tensor) -> Tensor:
            out, w = self.block.step(y[:, 0], window)
            new.append(w)
            return out.unsqueeze(1)

        x = self.r1(x, conv)
        x = self.r2(x, lambda y: cross_attend(self.cross_attn, y, mem_k, mem_v, mem_mask))
        return self.r3(x, self.ffn), new[0]


def group_rows(src_rows: Tensor, candidates: tuple[int, ...]) -> tuple[Tensor, int]:
    """src_rows (N,) source row of each decoding row -> (source rows (N/g,), g) for the first g > 1 of
    ``candidates`` whose consecutive groups of g rows share a source row; (src_rows, 1) if none."""
    n = src_rows.numel()
    for g in candidates:
        if g > 1 and n % g == 0:
            groups = src_rows.view(-1, g)
            if bool((groups == groups[:, :1]).all()):
                return groups[:, 0], g
    return src_rows, 1


class ConvMT(SinusoidalSeq2Seq):
    """Convolutional encoder-decoder; ``dynamic`` picks dynamic (True) or lightweight convolutions.
    ``sharing``: the decoder's strategy; ``src_embed``: ``embed(ids)`` for the encoder (None: ``sharing``
    itself, three-way tying)."""

    dynamic: bool = False
    source_state_keys = ("mask", "mem_k", "mem_v")

    def __init__(
        self, config: LightConvMTConfig, sharing: SharingStrategy, src_embed: SourceEmbedding | None = None
    ) -> None:
        super().__init__(sharing, src_embed)
        self.config = c = config
        self.encoder = nn.ModuleList(EncoderLayer(c, k, self.dynamic) for k in c.enc_kernels)
        self.decoder = nn.ModuleList(DecoderLayer(c, k, self.dynamic) for k in c.dec_kernels)
        self.enc_norm = nn.LayerNorm(c.dim) if c.pre_norm else nn.Identity()
        self.dec_norm = nn.LayerNorm(c.dim) if c.pre_norm else nn.Identity()
        self.drop = nn.Dropout(c.dropout)
        self.register_buffer("positions", sinusoidal_positions(c.max_positions, c.dim), persistent=False)

    def conv_layers(self) -> list[DecoderLayer]:
        return cast(list[DecoderLayer], list(self.decoder))

    def start(self, src: Tensor) -> DecodingState:
        """src (B, S) -> state: memory keys/values per layer, mask, empty (zero) windows (B, K-1, C)."""
        memory, mask = self.encode(src)
        kv = [layer.cross_attn.project_kv(memory) for layer in self.conv_layers()]
        first = memory[:, 0]
        return {
            "mask": mask,
            "mem_k": [k for k, _ in kv],
            "mem_v": [v for _, v in kv],
            "windows": [layer.block.conv.initial_window(first) for layer in self.conv_layers()],
            "pos": 0,
            "beams": 1,
        }

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """prev (B,) -> (h (B, d), next state); O(K) per layer."""
        pos = state["pos"]
        x = self._embed(self.sharing, prev[:, None], offset=pos)
        windows = []
        for i, layer in enumerate(self.conv_layers()):
            x, w = layer.step(x, state["mem_k"][i], state["mem_v"][i], state["mask"], state["windows"][i])
            windows.append(w)
        return self.dec_norm(x)[:, 0], {**state, "windows": windows, "pos": pos + 1}

    def reorder_state(self, state: DecodingState, index: Tensor) -> DecodingState:
        """Select decoding rows ``index`` (N,). Row r decodes source row r // state["beams"]; the source
        entries are selected once per group of rows of one sentence (beam search), else per row."""
        if "mem_k" not in state:  # beam search's fast path: source entries are kept by the caller
            return super().reorder_state(state, index)
        g = state.get("beams", 1)
        rest = super().reorder_state({k: v for k, v in state.items() if k not in self.source_state_keys}, index)
        n, n_src = index.numel(), state["mask"].shape[0]
        src_rows, rest["beams"] = group_rows(index // g, (g, n // n_src if n % n_src == 0 else 1))
        src_state = {k: state[k] for k in self.source_state_keys}
        if not torch.equal(src_rows, torch.arange(n_src, device=src_rows.device)):
            src_state = super().reorder_state(src_state, src_rows)
        return {**rest, **src_state}


@register("lightconv", LightConvMTConfig)
class LightConvMT(ConvMT):
    """Lightweight convolutions: one learned (H, K) kernel per layer."""

    dynamic = False


@register("dynamicconv", DynamicConvMTConfig)
class DynamicConvMT(ConvMT):
    """Dynamic convolutions: (H, K) kernels predicted from each time step's input."""

    dynamic = True
