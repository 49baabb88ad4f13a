"""Seeds to decide, checked against a simulation of the tests themselves (not against the formula the
code uses): for each setting, the paired t-test (or TOST) is run on many draws of n normal differences,
and the smallest n whose simulated power reaches 80% must be the printed count within one seed (10%
above 20 seeds). The four settings named in issue 50 printed 111, 123, "more than 200" and 113 before
the tail of the noncentral t stopped returning NaN."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
from scipy import stats as st

from embtie.decisions.power import MAX_SEEDS, nct_cdf, power_curve, seeds_to_decide

REPS = 20_000
MC_TOL = 0.012
"""about 4 Monte-Carlo standard errors of a power near 0.8 over REPS draws."""


def _sd_from_interval(half: float, n: int, confidence: float) -> float:
    """The per-seed sd behind a printed two-sided Student-t interval of half-width ``half`` over n seeds."""
    return half / float(st.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(n)


# (mean, sd, margin, family level) of the four counts issue 50 recomputed, read off their printed intervals
ISSUE_CASES = {
    "press-wolf untied (printed about 111)": (3.80, _sd_from_interval(23.075, 2, 0.975), 1.0, 0.05),
    "show-attend-tell VU fixed (printed about 123)": (39.14, _sd_from_interval(49.955, 3, 0.975), 5.0, 0.05),
    "show-attend-tell VU untied (printed more than 200)": (6.665, _sd_from_interval(9.335, 3, 0.975), 5.0, 0.05),
    "liu dynamicconv l2norm BLEU (printed about 113)": (0.615, _sd_from_interval(3.115, 3, 0.9875), 0.5, 0.05),
}
GRID = [(d, 1.0, 0.1, a) for d in (0.35, 0.8, 1.5, 4.0, 30.0) for a in (0.05, 0.0125)]


def _simulated_power(delta: float, sd: float, n: int, alpha: float, margin: float, rng) -> float:
    """How often the paired t-test (|mean| outside the margin) or TOST (inside) rejects at level alpha."""
    d = rng.normal(delta, sd, size=(REPS, n))
    mean, se = d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(n)
    if abs(delta) >= margin:
        return float(np.mean(np.abs(mean / se) > st.t.ppf(1 - alpha / 2, n - 1)))
    crit = st.t.ppf(1 - alpha, n - 1)
    return float(np.mean(((mean + margin) / se > crit) & ((mean - margin) / se < -crit)))


@pytest.mark.parametrize("case", [*ISSUE_CASES.values(), *GRID], ids=[*ISSUE_CASES, *map(str, GRID)])
def test_seeds_to_decide_agrees_with_a_simulation_of_the_test(case):
    delta, sd, margin, alpha = case
    rng = np.random.default_rng(7)
    n = seeds_to_decide(delta, sd, margin, alpha)
    assert n is not None and 2 <= n <= MAX_SEEDS
    tol = max(1, math.ceil(0.1 * n)) if n > 20 else 1
    assert _simulated_power(delta, sd, n + tol - 1, alpha, margin, rng) >= 0.8 - MC_TOL
    if n - tol - 1 >= 2:  # nothing tol + 1 seeds below the count decides as often
        assert _simulated_power(delta, sd, n - tol - 1, alpha, margin, rng) < 0.8 + MC_TOL


def test_the_issue_cases_need_the_few_seeds_the_recomputation_found():
    """Issue 50's independent recomputation: 4, 4, 4 and 10 seeds."""
    assert [seeds_to_decide(*v) for v in ISSUE_CASES.values()] == [4, 4, 4, 10]


def test_noncentral_t_matches_scipy_where_scipy_is_finite_and_stays_finite_in_the_tails():
    worst = 0.0
    for df in (1, 2, 3, 9, 99, 199):
        for nc in (-30.0, -2.0, 0.0, 0.7, 5.0, 29.7):
            for t in (-10.0, -1.98, 0.0, 2.5, 12.0):
                ours = float(nct_cdf(t, df, nc))
                assert 0.0 <= ours <= 1.0
                ref = st.nct.cdf(t, df, nc)
                if np.isfinite(ref):
                    worst = max(worst, abs(ours - ref))
    assert worst < 1e-5
    assert float(nct_cdf(-1.98, 99, 29.7)) < 1e-100  # scipy: NaN
    dfs, ts, ncs = np.array([1, 9, 199]), np.array([-1.98, 0.0, 2.5]), np.array([29.7, 0.7, -2.0])
    together = nct_cdf(ts, dfs, ncs)  # one degrees-of-freedom count per element
    assert together == pytest.approx([float(nct_cdf(t, int(d), c)) for t, d, c in zip(ts, dfs, ncs)], abs=1e-12)


def test_power_is_finite_and_grows_with_the_seeds_everywhere_a_report_can_meet():
    for delta, sd in ((3.8, 1.28), (0.01, 5.0), (40.0, 0.5), (-2.0, 1.0)):
        for alpha in (0.05, 0.0125, 0.001):
            ns, diff = power_curve(delta, sd, 0.0, alpha)  # margin 0: the t-test
            _, eq = power_curve(delta / 100, sd, 1.0, alpha)  # inside the margin: TOST
            assert list(ns) == list(range(2, MAX_SEEDS + 1))
            for series in (diff, eq):
                assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in series)
                assert all(b >= a - 1e-6 for a, b in pairwise(series))  # quadrature: ~1e-7


def test_a_difference_at_the_margin_or_an_unknown_spread_has_no_count():
    assert seeds_to_decide(1.0, 10.0, margin=1.0, alpha=0.05) is None  # needs more than MAX_SEEDS
    assert seeds_to_decide(1.0, math.nan, margin=0.5, alpha=0.05) is None
    assert seeds_to_decide(1.0, 0.0, margin=0.5, alpha=0.05) is None
