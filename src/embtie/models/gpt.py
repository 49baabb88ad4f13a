"""A decoder-only Transformer language model (GPT) whose input embedding and output layer belong to
its sharing strategy.

    x = sharing.embed(ids)                              (B, T, d)
    x = rmsnorm(x) (embed_norm) (+ learned positions)
    x = x + attn(norm(x)); x = x + mlp(norm(x))         n_layers pre-norm blocks, causal SDPA
    h = norm(x)                                         (B, T, d)  <- forward() returns this
    loss = sharing.loss(h, targets)                     computed by the task, never here

``zero_init_residual`` starts every residual branch at zero (the output projections of attention
and MLP are zero), so that at step 0 the model is the bigram model h = norm(embed(i)) of Su's
analysis (exactly so with rotary positions, which add nothing to x).

Speed: one fused qkv projection, ``F.scaled_dot_product_attention`` with ``is_causal`` (flash /
memory-efficient kernels where available), no dropout calls when dropout is 0, and bf16 autocast
from the training loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Annotated, ClassVar, Literal, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.models.base import ModelConfig
from embtie.models.language_model import LanguageModel
from embtie.models.registry import register
from embtie.schema import LAYER_COUNT, Setting
from embtie.sharing.base import SharingStrategy


@dataclass
class GPTConfig(ModelConfig):
    """Shape and initialisation of the GPT model."""

    name: str = "gpt"
    dim: Annotated[int, Setting("model width d (= embedding width); n_heads must divide it", ge=1)] = 128
    n_layers: Annotated[int, replace(LAYER_COUNT, help="transformer blocks")] = 4
    n_heads: Annotated[int, Setting("attention heads (rotary positions need an even head width)", ge=1)] = 4
    mlp_ratio: Annotated[float, Setting("MLP width as a multiple of dim", gt=0)] = 4.0
    max_len: Annotated[int, Setting("longest sequence (size of the learned position table / rotary cache)", ge=1)] = 256
    positions: Annotated[Literal["learned", "rotary"], Setting("learned position embeddings or rotary (RoPE)")] = (
        "learned"
    )
    norm: Annotated[Literal["layernorm", "rmsnorm"], Setting("the normalisation layers")] = "layernorm"
    dropout: Annotated[float, Setting("dropout on embeddings, attention and residual branches", ge=0, lt=1)] = 0.0
    bias: Annotated[bool, Setting("biases in the linear layers and LayerNorms")] = True
    zero_init_residual: Annotated[
        bool, Setting("start residual branches at zero (Su's regime): attention and MLP output projections = 0")
    ] = False
    init_std: Annotated[
        float, Setting("std of the normal init of the model's own matrices (not the embedding: the strategy's)", gt=0)
    ] = 0.02
    rope_base: Annotated[float, Setting("base of the rotary frequencies (positions: rotary)", gt=0)] = 10000.0
    embed_norm: Annotated[
        bool,
        Setting(
            "RMSNorm (no gain) on the strategy's input vectors, before learned positions are added "
            "(modded-nanogpt: x = norm(embed(ids)))"
        ),
    ] = False

    @property
    def embedding_dim(self) -> int:
        return self.dim

    def check(self) -> None:
        if self.dim % self.n_heads:
            raise ConfigError(f"model.dim={self.dim} must be divisible by model.n_heads={self.n_heads}")
        if self.positions == "rotary" and (self.dim // self.n_heads) % 2:
            raise ConfigError(f"rotary positions need an even head width; dim/n_heads = {self.dim // self.n_heads}")


def _norm(cfg: GPTConfig) -> nn.Module:
    if cfg.norm == "rmsnorm":
        return nn.RMSNorm(cfg.dim)
    return nn.LayerNorm(cfg.dim, bias=cfg.bias)


class Rotary(nn.Module):
    """Rotary position embedding (GPT-NeoX half-split form) for (B, H, T, hd) queries and keys."""

    cos: Tensor
    sin: Tensor
    """(max_len, hd/2) each, non-persistent buffers."""

    def __init__(self, head_dim: int, max_len: int, base: float) -> None:
        super().__init__()
        inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        ang = torch.outer(torch.arange(max_len, dtype=torch.float32), inv)  # (max_len, hd/2)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, H, T, hd) -> same shape, rotated by position."""
        t, half = x.shape[-2], x.shape[-1] // 2
        cos, sin = self.cos[:t].to(x.dtype), self.sin[:t].to(x.dtype)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Attention(nn.Module):
    """Causal multi-head self-attention with one fused qkv projection."""

    def __init__(self, cfg: GPTConfig, rotary: Rotary | None) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=cfg.bias)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=cfg.bias)
        self.dropout = cfg.dropout
        self.rotary = rotary

    def forward(self, x: Tensor) -> Tensor:
        """x: (B, T, d) -> (B, T, d)."""
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4).unbind(0)
        if self.rotary is not None:
            q, k = self.rotary(q), self.rotary(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        hidden = int(cfg.mlp_ratio * cfg.dim)
        self.fc = nn.Linear(cfg.dim, hidden, bias=cfg.bias)
        self.proj = nn.Linear(hidden, cfg.dim, bias=cfg.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    """Pre-norm block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, cfg: GPTConfig, rotary: Rotary | None) -> None:
        super().__init__()
        self.norm1 = _norm(cfg)
        self.attn = Attention(cfg, rotary)
        self.norm2 = _norm(cfg)
        self.mlp = MLP(cfg)
        self.drop = nn.Dropout(cfg.dropout) if cfg.dropout > 0 else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.drop(self.attn(self.norm1(x)))
        return x + self.drop(self.mlp(self.norm2(x)))


@register("gpt", GPTConfig)
class GPT(LanguageModel):
    """Decoder-only Transformer LM. ``forward(ids (B, T)) -> h (B, T, d)``, the final-norm hidden states.

    The logits / loss are the strategy's: ``model.sharing.logits(h)``, ``model.sharing.loss(h, targets)``.
    """

    stateful: ClassVar[bool] = False

    def __init__(self, config: GPTConfig, sharing: SharingStrategy) -> None:
        super().__init__()
        if sharing.dim != config.dim:
            raise ConfigError(f"sharing strategy width {sharing.dim} != model.dim={config.dim}")
        self.config = config
        self.sharing = sharing
        self.pos = nn.Embedding(config.max_len, config.dim) if config.positions == "learned" else None
        rotary = (
            Rotary(config.dim // config.n_heads, config.max_len, config.rope_base)
            if config.positions == "rotary"
            else None
        )
        self.embed_norm = nn.RMSNorm(config.dim, elementwise_affine=False) if config.embed_norm else nn.Identity()
        self.drop = nn.Dropout(config.dropout) if config.dropout > 0 else nn.Identity()
        self.blocks = nn.ModuleList(Block(config, rotary) for _ in range(config.n_layers))
        self.norm = _norm(config)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Init the model's own weights (the strategy keeps its own init)."""
        std = self.config.init_std
        proj_std = 0.0 if self.config.zero_init_residual else std / math.sqrt(2 * self.config.n_layers)
        if self.pos is not None:
            nn.init.normal_(self.pos.weight, 0.0, std)
        for block in cast(list[Block], list(self.blocks)):
            for lin in (block.attn.qkv, block.mlp.fc, block.attn.proj, block.mlp.proj):
                s = proj_std if lin in (block.attn.proj, block.mlp.proj) else std
                if s == 0.0:
                    nn.init.zeros_(lin.weight)
                else:
                    nn.init.normal_(lin.weight, 0.0, s)
                if lin.bias is not None:
                    nn.init.zeros_(lin.bias)

    def fsdp_units(self) -> list[nn.Module]:
        """The blocks, each sharded on its own under ``train.parallel=fsdp`` (``embtie.training.parallel``)."""
        return list(self.blocks)

    def forward(self, ids: Tensor) -> Tensor:
        """ids: (B, T) long -> h: (B, T, d) hidden states after the final norm."""
        t = ids.shape[1]
        if t > self.config.max_len:
            raise ValueError(f"sequence length {t} > model.max_len={self.config.max_len}")
        x = self.embed_norm(self.sharing.embed(ids))  # (B, T, d); each row RMS 1 with embed_norm
        if self.pos is not None:
            x = x + self.pos.weight[:t]
        x = self.drop(x)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)
