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


def nct_cdf(t: np.ndarray | float, df: int, nc: np.ndarray | float) -> np.ndarray:
    """P(T <= t) for T noncentral t with ``df`` degrees of freedom and noncentrality ``nc``
    (arrays broadcast together; the result has their broadcast shape), never NaN for finite input."""
    s, w = _chi_nodes(int(df))
    t_arr, nc_arr = np.broadcast_arrays(np.asarray(t, dtype=float), np.asarray(nc, dtype=float))
    z = t_arr[..., None] * s - nc_arr[..., None]  # [..., nodes]
    return np.clip(special.ndtr(z) @ w, 0.0, 1.0)


def power_difference(delta: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t-test at level ``alpha`` with n seeds, true mean ``delta``."""
    if n < 2:
        return 0.0
    df, nc = n - 1, delta / (sd / math.sqrt(n))
    crit = float(st.t.ppf(1 - alpha / 2, df))
    return float(1.0 - nct_cdf(crit, df, nc) + nct_cdf(-crit, df, nc))


def power_equivalence(delta: float, sd: float, n: int, alpha: float, margin: float) -> float:
    """A lower bound of TOST's power at level ``alpha`` (both one-sided tests must reject; the bound
    subtracts the two failure probabilities), true mean ``delta`` inside ± ``margin``."""
    if n < 2:
        return 0.0
    df, se = n - 1, sd / math.sqrt(n)
    crit = float(st.t.ppf(1 - alpha, df))
    fail_low = float(nct_cdf(crit, df, (delta + margin) / se))  # (d + m)/se must exceed crit
    fail_high = 1.0 - float(nct_cdf(-crit, df, (delta - margin) / se))  # (d - m)/se must fall below -crit
    return max(0.0, 1.0 - fail_low - fail_high)


@lru_cache(maxsize=64)
def _all_n(alpha: float, one_sided: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For n = 2..MAX_SEEDS: n, the critical t of the test at ``alpha``, and the chi nodes and weights of
    n - 1 degrees of freedom stacked ([n, nodes])."""
    ns = np.arange(2, MAX_SEEDS + 1)
    crit = st.t.ppf(1 - (alpha if one_sided else alpha / 2), ns - 1)
    nodes = np.stack([_chi_nodes(int(n) - 1)[0] for n in ns])
    return ns, crit, nodes, _legendre()[1]


def _cdf_rows(t: np.ndarray, nc: np.ndarray, nodes: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``nct_cdf`` for every n at once: t and nc of shape [n], nodes [n, nodes]."""
    return np.clip(special.ndtr(t[:, None] * nodes - nc[:, None]) @ w, 0.0, 1.0)


def power_curve(delta: float, sd: float, margin: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """n = 2..MAX_SEEDS and the power at each: of TOST (its lower bound) when |delta| is inside the
    margin, of the two-sided t-test otherwise (the same numbers as ``power_equivalence`` and
    ``power_difference``, all n in one array operation)."""
    inside = abs(delta) < margin
    ns, crit, nodes, w = _all_n(alpha, inside)
    se = sd / np.sqrt(ns)
    if inside:
        fail_low = _cdf_rows(crit, (delta + margin) / se, nodes, w)
        fail_high = 1.0 - _cdf_rows(-crit, (delta - margin) / se, nodes, w)
        return ns, np.maximum(0.0, 1.0 - fail_low - fail_high)
    nc = delta / se
    return ns, 1.0 - _cdf_rows(crit, nc, nodes, w) + _cdf_rows(-crit, nc, nodes, w)


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
