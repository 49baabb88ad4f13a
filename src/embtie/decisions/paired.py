"""Paired differences over seeds: with common random numbers, seed s of a strategy and seed s of the
baseline share their data order, body initialisation, dropout stream and evaluation sample, so the
per-seed difference d_s removes most of the seed-to-seed spread (Bouthillier et al., MLSys 2021).

The mean difference gets a Student-t interval with n - 1 degrees of freedom; two tests follow from it:
no difference (two-sided t-test of mean 0) and equivalence within ± margin (Schuirmann's two one-sided
tests, TOST: equivalence at level a exactly when the 1 - 2a interval lies inside the margin). Student's t
is read through scipy.special's ufuncs (``stdtr``, ``stdtrit``: the same numbers as ``scipy.stats.t``
without its per-call overhead, which the simulations of the tests pay thousands of times)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special

from embtie.decisions.margins import Margin


@dataclass(frozen=True)
class PairedDifference:
    """Per-seed differences d_s = strategy - baseline (percent of the baseline for a relative margin)."""

    diffs: tuple[float, ...]
    margin: Margin

    @property
    def n(self) -> int:
        return len(self.diffs)

    @cached_property
    def mean(self) -> float:
        return float(np.mean(self.diffs)) if self.diffs else math.nan

    @cached_property
    def sd(self) -> float:
        return float(np.std(self.diffs, ddof=1)) if self.n > 1 else math.nan

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n) if self.n > 1 else math.nan

    @property
    def df(self) -> int:
        """Degrees of freedom of the t statistic (n - 1 for one block of pairs)."""
        return self.n - 1

    def interval(self, level: float) -> tuple[float, float]:
        """Two-sided ``level`` Student-t interval of the mean difference ((nan, nan) below 2 seeds)."""
        if self.df < 1:
            return (math.nan, math.nan)
        if self.sd == 0:
            return (self.mean, self.mean)
        half = float(special.stdtrit(self.df, 0.5 + level / 2)) * self.se
        return (self.mean - half, self.mean + half)

    def p_difference(self) -> float:
        """Two-sided p-value of the paired t-test of mean difference 0 (nan below 2 seeds)."""
        if self.df < 1:
            return math.nan
        if self.sd == 0:
            return 1.0 if self.mean == 0 else 0.0
        return float(2 * special.stdtr(self.df, -abs(self.mean) / self.se))

    def p_equivalence(self) -> float:
        """TOST p-value of |mean difference| >= margin: the larger of the two one-sided p-values."""
        if self.df < 1:
            return math.nan
        m = self.margin.value
        if self.sd == 0:
            return 0.0 if abs(self.mean) < m else 1.0
        p_low = special.stdtr(self.df, -(self.mean + m) / self.se)  # H0: d <= -m
        p_high = special.stdtr(self.df, (self.mean - m) / self.se)  # H0: d >= +m
        return float(max(p_low, p_high))


def paired_difference(
    values: Sequence[float], baseline: Sequence[float], margin: Margin
) -> PairedDifference:
    """Differences of two per-seed series given in the same seed order (lengths must match)."""
    if len(values) != len(baseline):
        raise ValueError(f"paired series differ in length: {len(values)} vs {len(baseline)} seeds")
    a, b = np.asarray(values, dtype=float), np.asarray(baseline, dtype=float)
    d = 100.0 * (a / b - 1.0) if margin.relative else a - b
    return PairedDifference(tuple(float(x) for x in d), margin)
