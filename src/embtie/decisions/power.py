"""How many seeds an undecided comparison would need, at its observed mean difference and spread, to be
decided with 80% probability: by the paired t-test when the observed difference is outside the margin,
by the equivalence test (TOST) when it is inside. Noncentral-t power (Student's test with n - 1 degrees
of freedom), computed for every n up to MAX_SEEDS at once and read off at the first n that reaches it.

The noncentral t distribution function is computed here rather than by ``scipy.stats.nct``, whose
``cdf`` returns NaN far in a tail (``nct.cdf(-1.98, 99, 29.7)``: a NaN that once made 4 seeds print as
"more than 200"). With T = (Z + nc) / S, S = sqrt(V / df), V ~ chi2(df) independent of Z ~ N(0, 1),

    P(T <= t) = E_S[ Phi(t S - nc) ],

an expectation of a bounded, smooth function of S. It is integrated over the chi-square quantile
u in (0, 1) (V = F^-1(u)) by Gauss-Legendre quadrature: every node is a finite number in [0, 1], so the
result is finite and in [0, 1] for every (t, df, nc), accurate to about 1e-6 where scipy is finite
(tests/decisions/test_power.py), and a simulation of the tests themselves checks the seed counts."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special
from scipy import stats as st

MAX_SEEDS = 200
_NODES = 256
"""Gauss-Legendre nodes over the chi-square quantile."""


@lru_cache(maxsize=1)
def _legendre() -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes mapped to u in (0, 1) and their weights (summing to 1)."""
    x, w = np.polynomial.legendre.leggauss(_NODES)
    return (x + 1) / 2, w / 2


@lru_cache(maxsize=512)
def _chi_nodes(df: int) -> tuple[np.ndarray, np.ndarray]:
    """S = sqrt(V / df) at the quadrature nodes of u in (0, 1) and their weights (summing to 1)."""
    u, w = _legendre()
    return np.sqrt(st.chi2.ppf(u, df) / df), w


def nct_cdf(t: np.ndarray | float, df: np.ndarray | int, nc: np.ndarray | float) -> np.ndarray:
    """P(T <= t) for T noncentral t with ``df`` degrees of freedom and noncentrality ``nc``, never NaN for
    finite input. ``df`` is one count, or a 1-D array of counts [k] (then t and nc broadcast to [k])."""
    if np.ndim(df) == 0:
        s = _chi_nodes(int(df))[0]  # [nodes]
    else:
        s = _stacked_nodes(tuple(int(d) for d in np.asarray(df)))  # [k, nodes]
    t_arr, nc_arr = np.broadcast_arrays(np.asarray(t, dtype=float), np.asarray(nc, dtype=float))
    z = t_arr[..., None] * s - nc_arr[..., None]  # [..., nodes]
    return np.clip(special.ndtr(z) @ _legendre()[1], 0.0, 1.0)


@lru_cache(maxsize=4)
def _stacked_nodes(dfs: tuple[int, ...]) -> np.ndarray:
    """``_chi_nodes``' S for each degrees-of-freedom count, stacked ([len(dfs), nodes])."""
    return np.stack([_chi_nodes(df)[0] for df in dfs])


def power_curve(delta: float, sd: float, margin: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """n = 2..MAX_SEEDS and the power at each, true mean ``delta`` and per-seed spread ``sd``: when |delta|
    is inside ± ``margin``, a lower bound of TOST's power at level ``alpha`` (both one-sided tests must
    reject; the bound subtracts the two failure probabilities); otherwise the power of the two-sided paired
    t-test (margin 0: always that one)."""
    inside = abs(delta) < margin
    ns = np.arange(2, MAX_SEEDS + 1)
    crit = st.t.ppf(1 - (alpha if inside else alpha / 2), ns - 1)
    se = sd / np.sqrt(ns)
    if inside:
        fail_low = nct_cdf(crit, ns - 1, (delta + margin) / se)  # (d + m)/se must exceed crit
        fail_high = 1.0 - nct_cdf(-crit, ns - 1, (delta - margin) / se)  # (d - m)/se must fall below -crit
        return ns, np.maximum(0.0, 1.0 - fail_low - fail_high)
    nc = delta / se
    return ns, 1.0 - nct_cdf(crit, ns - 1, nc) + nct_cdf(-crit, ns - 1, nc)


def seeds_to_decide(delta: float, sd: float, margin: float, alpha: float, power: float = 0.8) -> int | None:
    """Seeds (pairs) that would decide a comparison with probability ``power`` if the observed mean
    difference and spread were the true ones: the smallest n in 2..MAX_SEEDS whose power reaches it;
    None when the spread is unknown or more than MAX_SEEDS would be needed (the difference sits at the
    margin). Every n is evaluated (no search that assumes monotone power)."""
    if not (math.isfinite(delta) and math.isfinite(sd)) or sd <= 0:
        return None
    ns, curve = power_curve(delta, sd, margin, alpha)
    reached = np.nonzero(curve >= power)[0]
    return int(ns[reached[0]]) if reached.size else None
