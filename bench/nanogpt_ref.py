"""A nanoGPT-style reference model for the throughput benchmarks: nanoGPT's block (pre-LayerNorm,
fused qkv, causal scaled_dot_product_attention, GELU MLP), learned positions, its weight tying
(``wte.weight is lm_head.weight``) and its loss (``F.cross_entropy`` on the full logits), written here.
``bench.compile_speed`` runs it at the shape of embtie's GPT, so that embtie's step has a yardstick
users know."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie.models.gpt import GPTConfig


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, bias: bool) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d, bias=bias), nn.LayerNorm(d, bias=bias)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d, bias=bias), nn.Linear(d, d, bias=bias)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d, bias=bias), nn.GELU(), nn.Linear(4 * d, d, bias=bias))

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.c_proj(y)
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """nanoGPT's GPT at the shape of ``cfg`` (dim, n_layers, n_heads, max_len, bias), tied, plain loss."""

    def __init__(self, cfg: GPTConfig, vocab_size: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab_size, cfg.dim)
        self.wpe = nn.Embedding(cfg.max_len, cfg.dim)
        self.h = nn.ModuleList(_Block(cfg.dim, cfg.n_heads, cfg.bias) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.dim, bias=cfg.bias)
        self.lm_head = nn.Linear(cfg.dim, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, 0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: Tensor, targets: Tensor) -> Tensor:
        """idx, targets: (B, T) -> the mean cross-entropy (0-d)."""
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))
