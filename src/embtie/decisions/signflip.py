"""The robustness column: the exact sign-flip (permutation) test of paired differences, beside the t-test.

Under "no difference" with common random numbers, each pair's difference is as likely to have either
sign (its two runs are exchangeable), so the 2^n patterns of signs give the exact null distribution of
the mean difference, with no normality assumed (Fisher 1935; Good, *Permutation Tests*, 2000). The
two-sided p is the share of patterns whose |mean| reaches the observed one; the observed pattern is one
of them, so p >= 2 / 2^n: with 4 pairs no sign-flip test can go below 0.125, with 5 below 0.0625. A
verdict the t-test reaches at a level below that smallest p rests on the normal model: it is
**model-based** (``model_based``), and the reports say so.

Exact for n <= ``EXACT_MAX`` (2^16 patterns); above, a Monte-Carlo estimate over ``DRAWS`` random sign
patterns with a fixed seed, counted with the observed one ((hits + 1) / (draws + 1), a valid p)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

EXACT_MAX = 16
DRAWS = 20_000


def _patterns(n: int) -> np.ndarray:
    """Every sign pattern of n pairs: [2^n, n] of +-1."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    return 1 - 2 * bits


def signflip_p(diffs: Sequence[float]) -> float:
    """Two-sided sign-flip p of "the paired differences are symmetric about 0" (nan below 2 pairs)."""
    d = np.asarray(diffs, dtype=float)
    n = d.size
    if n < 2:
        return math.nan
    observed = abs(d.mean())
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    if n <= EXACT_MAX:
        means = np.abs(_patterns(n) @ d) / n
        return float(np.mean(means >= observed - tol))
    signs = np.random.default_rng(0).choice([-1.0, 1.0], size=(DRAWS, n))
    hits = int(np.sum(np.abs(signs @ d) / n >= observed - tol))
    return (hits + 1) / (DRAWS + 1)


def smallest_p(n: int) -> float:
    """The smallest two-sided sign-flip p any n pairs can give: 2 / 2^n (1 below 2 pairs)."""
    return 1.0 if n < 2 else min(1.0, 2.0 / 2**n)


def model_based(verdict: str, n: int, level: float) -> bool:
    """Whether a better/worse verdict tested at ``level`` (its step's level) is out of reach of any
    distribution-free sign test with n pairs: then it rests on the t-test's normal model."""
    return verdict in ("better", "worse") and smallest_p(n) > level
