"""Output-vector norm against token frequency (Shalev et al., Figure 2): Spearman's rank correlation.

Shalev et al. report rho = 0.76-0.93 between ||w_j|| of learned target vectors and the number of times
word j appears in the training set (their sign convention: they report the strength; their Figure 2
shows large norms for rare words, i.e. a negative rank correlation with frequency). Here rho keeps its
sign; the report states both.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def norm_frequency_correlation(norms: np.ndarray, counts: np.ndarray, min_count: int = 1) -> dict:
    """Spearman's rho between (V,) norms and (V,) training counts over tokens with count >= min_count.

    Returns {"rho", "pvalue", "n"}; rho is NaN when fewer than 3 tokens qualify or either side is constant.
    Norms equal up to float rounding (relative spread < 1e-5, e.g. L2-normalised or fixed unit rows) count
    as constant: ranking rounding noise would give a meaningless rho.
    """
    norms = np.asarray(norms, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if norms.shape != counts.shape or norms.ndim != 1:
        raise ValueError(f"norms {norms.shape} and counts {counts.shape} must be equal-length 1-D arrays")
    keep = counts >= min_count
    n = int(keep.sum())
    x, y = norms[keep], counts[keep]
    if n < 3 or np.ptp(x) <= 1e-5 * np.abs(x).max() or np.ptp(y) == 0:
        return {"rho": float("nan"), "pvalue": float("nan"), "n": n}
    res = stats.spearmanr(x, y)
    return {"rho": float(res.statistic), "pvalue": float(res.pvalue), "n": n}
