"""Convolutional sequence to sequence learning (Gehring et al. 2017; fairseq's ``fconv``).

Encoder: e = dropout(embed(x) + P_enc[pos]) (B, S, d), a linear map to the first conv width, then
blocks ``x <- (GLU(conv(x)) + res(x)) * sqrt(0.5)`` (symmetric padding; padded positions are zeroed
before every convolution so they never reach real ones), and a linear map back to d: z (B, S, d).
Attention keys are z, values z + e (the paper's c = sum_j a_j (z_j + e_j)); the gradient of z is
scaled by 1 / (2 * decoder layers), as fairseq does.

Decoder: g = dropout(embed(y) + P_dec[pos]) (B, T, d), a linear map to the first conv width, then per
layer: a = GLU(causal conv(h)) (K-1 zeros on the left); multi-step attention with queries
d_i = (W a_i + g_i) * sqrt(0.5), context c_i = sum_j softmax_j(d_i . z_j) (z_j + e_j) * m sqrt(1/m)
(m = real source positions of the row), a <- (a + W_o c) * sqrt(0.5), h <- (a + res(h)) * sqrt(0.5).
Finally h = dropout(W h) (B, T, d), which the sharing object turns into logits (tying possible).
Incremental decoding keeps the last K-1 inputs of every causal convolution (``convs2s_state``).
No weight normalization (fairseq has it; left out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, cast

import torch
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.models.base import ModelConfig
from embtie.models.convs2s_state import GLUConv, GradScale, conv_buffers, fairseq_linear
from embtie.models.registry import register
from embtie.models.seq2seq import DecodingState, Seq2Seq, SourceEmbedding
from embtie.schema import Rule, Setting
from embtie.sharing.base import SharingStrategy

HALF = math.sqrt(0.5)


def _pairs(layers: list[list[int]]) -> bool:
    return all(len(pair) == 2 for pair in layers)


@dataclass
class ConvS2SConfig(ModelConfig):
    """Sizes of ConvS2S (defaults: fairseq ``fconv``: width 512, 20 + 20 layers of [512, 3])."""

    name: str = "convs2s"

    dim: Annotated[int, Setting("embedding width d (input of the first conv and output of the decoder)", ge=1)] = 512
    encoder_layers: Annotated[
        list[list[int]],
        Setting(
            "[channels, kernel width] of each encoder block",
            min_length=1,
            ge=1,
            rule=Rule(_pairs, "[channels, kernel width] of each block"),
        ),
    ] = field(default_factory=lambda: [[512, 3]] * 20)
    decoder_layers: Annotated[
        list[list[int]],
        Setting(
            "[channels, kernel width] of each decoder block (every one attends to the source)",
            min_length=1,
            ge=1,
            rule=Rule(_pairs, "[channels, kernel width] of each block"),
        ),
    ] = field(default_factory=lambda: [[512, 3]] * 20)
    dropout: Annotated[float, Setting("dropout on embeddings, convolutions and attention", ge=0, lt=1)] = 0.1
    max_positions: Annotated[int, Setting("longest source or target sequence (learned positions)", ge=1)] = 1024

    @property
    def embedding_dim(self) -> int:
        return self.dim


class MultiStepAttention(nn.Module):
    """One decoder layer's attention: conv output a (B, T, C) and target embedding g (B, T, d) ->
    (a + W_o c) * sqrt(0.5) (B, T, C), c the context over the encoder keys/values (B, S, d)."""

    def __init__(self, channels: int, dim: int) -> None:
        super().__init__()
        self.in_proj = fairseq_linear(channels, dim)
        self.out_proj = fairseq_linear(dim, channels)

    def forward(self, a: Tensor, g: Tensor, keys: Tensor, values: Tensor, mask: Tensor, scale: Tensor) -> Tensor:
        """mask (B, S) True at real source tokens; scale (B, 1, 1) = m * sqrt(1/m)."""
        q = (self.in_proj(a) + g) * HALF
        scores = torch.bmm(q, keys.transpose(1, 2)).masked_fill(~mask[:, None, :], float("-inf"))
        attn = torch.softmax(scores.float(), dim=-1).to(values.dtype)
        ctx = torch.bmm(attn, values) * scale
        return (a + self.out_proj(ctx)) * HALF


@register("convs2s", ConvS2SConfig)
class ConvS2S(Seq2Seq):
    """Convolutional encoder-decoder; ``sharing`` the decoder's strategy, ``src_embed`` the encoder's
    input embedding (None: ``sharing`` itself, three-way tying)."""

    def __init__(
        self, config: ConvS2SConfig, sharing: SharingStrategy, src_embed: SourceEmbedding | None = None
    ) -> None:
        super().__init__(sharing, src_embed)
        self.config = c = config
        self.enc_pos = nn.Embedding(c.max_positions, c.dim)
        self.dec_pos = nn.Embedding(c.max_positions, c.dim)
        for emb in (self.enc_pos, self.dec_pos):
            nn.init.normal_(emb.weight, 0.0, 0.1)
        self.enc_in = fairseq_linear(c.dim, c.encoder_layers[0][0], c.dropout)
        self.encoder = self._blocks(c.encoder_layers, causal=False)
        self.enc_out = fairseq_linear(c.encoder_layers[-1][0], c.dim)
        self.dec_in = fairseq_linear(c.dim, c.decoder_layers[0][0], c.dropout)
        self.decoder = self._blocks(c.decoder_layers, causal=True)
        self.attention = nn.ModuleList(MultiStepAttention(ch, c.dim) for ch, _ in c.decoder_layers)
        self.dec_out = fairseq_linear(c.decoder_layers[-1][0], c.dim, c.dropout)
        self.drop = nn.Dropout(c.dropout)

    @property
    def max_positions(self) -> int:
        return self.config.max_positions

    def encoder_blocks(self) -> list[GLUConv]:
        return cast(list[GLUConv], list(self.encoder))

    def decoder_blocks(self) -> list[tuple[GLUConv, MultiStepAttention]]:
        """Each decoder convolution with the attention that follows it."""
        return list(zip(cast(list[GLUConv], list(self.decoder)), cast(list[MultiStepAttention], list(self.attention))))

    def _blocks(self, layers: list[list[int]], causal: bool) -> nn.ModuleList:
        widths = [layers[0][0]] + [ch for ch, _ in layers[:-1]]
        d = self.config.dropout
        return nn.ModuleList(GLUConv(w, ch, k, d, causal) for w, (ch, k) in zip(widths, layers))

    def _embed(self, embedder: SourceEmbedding, positions: nn.Embedding, ids: Tensor, offset: int = 0) -> Tensor:
        """ids (B, L) at positions offset.. -> dropout(embed + position) (B, L, d)."""
        n = ids.shape[1]
        if offset + n > self.config.max_positions:
            raise ConfigError(
                f"sequence of {offset + n} tokens exceeds max_positions={self.config.max_positions}; "
                "raise model.max_positions or shorten the input"
            )
        x = embedder.embed(ids)
        return self.drop(x + positions.weight[offset : offset + n].to(x.dtype))

    def encode(self, src: Tensor) -> DecodingState:
        """src (B, S) -> keys z (B, S, d), values z + e (B, S, d), mask (B, S), scale (B, 1, 1)."""
        mask = self.source_mask(src)
        keep = mask.unsqueeze(-1)
        e = self._embed(self.src_embed, self.enc_pos, src)
        x = self.enc_in(e)
        for block in self.encoder_blocks():
            res = block.residual(x)
            x = (block(x.masked_fill(~keep, 0.0)) + res) * HALF
        z = self.enc_out(x).masked_fill(~keep, 0.0)
        z = GradScale.apply(z, 1.0 / (2.0 * len(self.decoder)))
        m = mask.sum(1).clamp_min(1).to(z.dtype)
        return {"keys": z, "values": z + e, "mask": mask, "scale": (m * m.rsqrt()).view(-1, 1, 1)}

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src (B, S), tgt_in (B, T) -> h (B, T, d); every convolution over the whole sequence."""
        mem = self.encode(src)
        g = self._embed(self.sharing, self.dec_pos, tgt_in)
        x = self.dec_in(g)
        for block, attn in self.decoder_blocks():
            res = block.residual(x)
            a = attn(block(x), g, mem["keys"], mem["values"], mem["mask"], mem["scale"])
            x = (a + res) * HALF
        return self.drop(self.dec_out(x))

    def start(self, src: Tensor) -> DecodingState:
        """Encode src (B, S); the causal convolutions start from empty (zero) histories."""
        state = self.encode(src)
        widths = [self.config.decoder_layers[0][0]] + [ch for ch, _ in self.config.decoder_layers[:-1]]
        state["conv"] = conv_buffers([block for block, _ in self.decoder_blocks()], widths, state["keys"])
        state["pos"] = 0
        return state

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """prev (B,) -> (h (B, d), state with every layer's last K-1 conv inputs updated)."""
        g = self._embed(self.sharing, self.dec_pos, prev[:, None], offset=state["pos"])
        x = self.dec_in(g)
        buffers = []
        for (block, attn), buf in zip(self.decoder_blocks(), state["conv"]):
            res = block.residual(x)
            y, buf = block.step(x, buf)
            buffers.append(buf)
            x = (attn(y, g, state["keys"], state["values"], state["mask"], state["scale"]) + res) * HALF
        h = self.drop(self.dec_out(x))[:, 0]
        return h, {**state, "conv": buffers, "pos": state["pos"] + 1}
