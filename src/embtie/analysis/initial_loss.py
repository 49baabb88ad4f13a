"""Su (2023): the step-0 loss of a language model whose residual branches start at zero.

Such a model is, at step 0, the bigram model h = RMSNorm(embed(x_t)) read out by the output layer.
With tied embeddings the logit of the input token itself is ||e_i||^2 / sigma ~ d sigma, so the loss is
about log(e^{d sigma} + V - 1), far above the log V of a uniform guess when d sigma >> log V.

``predicted``: Su's formula generalised to any strategy: log(e^{m_ii - m_off} + V - 1), with m_ii the
mean logit of the input token and m_off that of any other token (from the strategy's analytic
``step0_moments``).
``predicted_refined``: also keeps the spread of the logits: the V - 1 off-diagonal logits are treated as
Gaussians of variance s^2, whose log-sum-exp is log(V-1) + m_off + s^2/2 while s <= sqrt(2 log(V-1)) and
m_off + s sqrt(2 log(V-1)) beyond (the random-energy-model limit, where the largest term dominates);
the diagonal logit is integrated over its own Gaussian spread (Gauss-Hermite).
``measure_initial_loss``: the cross-entropy of that bigram model on real text.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from embtie import sharing
from embtie.sharing.base import LogitMoments


def predicted_loss(m: LogitMoments, vocab_size: int) -> float:
    """Su's estimate log(e^{m_ii - m_off} + V - 1)."""
    return float(np.logaddexp(m.diag_mean - m.off_mean, math.log(vocab_size - 1)))


def _lse_gaussians(n: int, mean: float, var: float) -> float:
    """log sum_{k<n} e^{z_k}, z_k ~ N(mean, var) i.i.d., for large n (random-energy-model estimate)."""
    s = math.sqrt(max(var, 0.0))
    ln_n = math.log(n)
    if s <= math.sqrt(2 * ln_n):
        return ln_n + mean + var / 2
    return mean + s * math.sqrt(2 * ln_n)


def predicted_loss_refined(m: LogitMoments, vocab_size: int, nodes: int = 40) -> float:
    """E[ log(e^{z_ii} + sum_{k != i} e^{z_k}) ] - m_off with Gaussian logits (see module docstring)."""
    rest = _lse_gaussians(vocab_size - 1, m.off_mean, m.off_var)
    x, w = np.polynomial.hermite_e.hermegauss(nodes)  # weight e^{-x^2/2}
    z = m.diag_mean + math.sqrt(max(m.diag_var, 0.0)) * x
    expected = float((w * np.logaddexp(z, rest)).sum() / w.sum())
    return expected - m.off_mean


def rms_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """(..., d) -> (..., d) x / rms(x), no learned gain (the final norm of a model at init)."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


@torch.no_grad()
def measure_initial_loss(s: sharing.SharingStrategy, tokens: torch.Tensor, batch: int = 4096) -> float:
    """Cross-entropy of the bigram model h_t = RMSNorm(embed(x_t)) predicting x_{t+1}.

    tokens: (N,) long ids of real text. Returns the mean loss over the N - 1 positions.
    """
    total, count = 0.0, 0
    for i in range(0, tokens.numel() - 1, batch):
        inp = tokens[i : i + batch]
        tgt = tokens[i + 1 : i + 1 + batch]
        inp = inp[: tgt.numel()]
        loss = s.loss(rms_norm(s.embed(inp)), tgt)
        total += float(loss) * tgt.numel()
        count += tgt.numel()
    return total / count


def initial_loss_table(
    names: list[str], vocab_size: int, dim: int, tokens: torch.Tensor, seed: int = 0
) -> dict[str, dict[str, float]]:
    """{strategy: {"predicted", "predicted_refined", "measured"}} with each strategy's default options."""
    out: dict[str, dict[str, float]] = {}
    for name in names:
        torch.manual_seed(seed)
        s = sharing.build(name, vocab_size=vocab_size, dim=dim).eval()
        m = s.step0_moments()
        out[name] = {
            "predicted": predicted_loss(m, vocab_size),
            "predicted_refined": predicted_loss_refined(m, vocab_size),
            "measured": measure_initial_loss(s, tokens),
        }
    return out
