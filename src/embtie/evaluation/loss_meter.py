"""Perplexity and token-weighted loss accumulation (pure functions over numbers and tensors)."""

from __future__ import annotations

import math

from torch import Tensor


def perplexity(nll_sum: float, tokens: int) -> float:
    """exp(total negative log-likelihood / tokens): token-weighted, never a mean of batch means."""
    if tokens <= 0:
        raise ValueError("perplexity of zero tokens")
    mean = nll_sum / tokens
    return math.exp(mean) if mean < 700 else math.inf


class LossMeter:
    """Accumulates (mean loss of a batch, its token count) pairs into a token-weighted mean."""

    def __init__(self) -> None:
        self.nll_sum = 0.0
        self.tokens = 0

    def add(self, mean_loss: float | Tensor, tokens: int) -> None:
        self.nll_sum += float(mean_loss) * tokens
        self.tokens += tokens

    @property
    def loss(self) -> float:
        return self.nll_sum / self.tokens if self.tokens else math.nan

    @property
    def ppl(self) -> float:
        return perplexity(self.nll_sum, self.tokens) if self.tokens else math.nan
