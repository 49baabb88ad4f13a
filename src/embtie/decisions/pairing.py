"""What pairing seeds buys: how strongly a strategy's per-seed results follow the baseline's, and how
much smaller the spread of the paired differences is than that of unpaired ones.

For per-seed values a_s (strategy) and b_s (baseline), in percent of the baseline's mean: the paired
difference d_s = a_s - b_s has variance var(a) + var(b) - 2 cov(a, b); seeds drawn independently for
the two strategies would give var(a) + var(b). The share of that variance the pairing removes is
2 cov(a, b) / (var(a) + var(b)), close to the correlation when both spread alike. Relative differences
use the percent form of ``embtie.decisions.paired`` (100 (a / b - 1) per seed)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Pairing:
    """The pairing of one strategy with the baseline over n seeds (spreads in percent of the baseline)."""

    n: int
    correlation: float
    """Pearson correlation of the per-seed values."""
    sd_paired: float
    """standard deviation of the per-seed percent differences."""
    sd_unpaired: float
    """what that standard deviation would be with independent seeds: sqrt(var(a) + var(b)), in percent."""

    @property
    def variance_removed(self) -> float:
        """1 - sd_paired^2 / sd_unpaired^2: the share of the difference's variance pairing removes."""
        if not self.sd_unpaired > 0:
            return math.nan
        return 1.0 - (self.sd_paired / self.sd_unpaired) ** 2


def pairing(values: Sequence[float], baseline: Sequence[float]) -> Pairing:
    """The pairing of two per-seed series in the same seed order (>= 3 seeds for a correlation)."""
    if len(values) != len(baseline):
        raise ValueError(f"paired series differ in length: {len(values)} vs {len(baseline)} seeds")
    a, b = np.asarray(values, dtype=float), np.asarray(baseline, dtype=float)
    n = len(a)
    if n < 3:
        return Pairing(n, math.nan, math.nan, math.nan)
    scale = 100.0 / float(b.mean())
    d = 100.0 * (a / b - 1.0)
    unpaired = math.sqrt(float(a.var(ddof=1) + b.var(ddof=1))) * scale
    return Pairing(n, float(np.corrcoef(a, b)[0, 1]), float(d.std(ddof=1)), unpaired)
