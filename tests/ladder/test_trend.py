"""The ladder's trend: weighted least squares of the effect on log10(body) recovers a known slope, and its
interval covers the true slope as often as it says on simulated ladders."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from embtie.ladder.trend import fit

BODY = np.array([12e3, 28e3, 49e3, 98e3, 221e3])


def test_a_noiseless_line_is_recovered_exactly():
    effect = 1.5 - 2.0 * np.log10(BODY)
    t = fit(BODY, effect, [0.5] * 5)
    assert t.slope == pytest.approx(-2.0) and t.intercept == pytest.approx(1.5)
    assert t.scale == 1.0  # no scatter beyond the seeds'
    assert t.zero_crossing() == pytest.approx(10 ** (1.5 / 2.0))
    mean, lo, hi = t.predict(1e6)
    assert mean == pytest.approx(1.5 - 12.0) and lo < mean < hi


def test_the_weights_and_covariance_are_those_of_weighted_least_squares():
    """Against the closed form: b = cov_w(x, y) / var_w(x), var(b) = 1 / sum w (x - xbar_w)^2 (scale 1)."""
    rng = np.random.default_rng(3)
    se = np.array([0.3, 0.6, 0.4, 0.9, 0.5])
    y = 0.2 + 0.7 * np.log10(BODY) + rng.normal(0, 0.01, 5)
    x, w = np.log10(BODY), 1 / se**2
    xbar = np.sum(w * x) / np.sum(w)
    slope = np.sum(w * (x - xbar) * (y - np.sum(w * y) / np.sum(w))) / np.sum(w * (x - xbar) ** 2)
    t = fit(BODY, y, se)
    assert t.slope == pytest.approx(slope)
    assert t.scale == 1.0 and t.slope_se == pytest.approx(1 / math.sqrt(np.sum(w * (x - xbar) ** 2)))
    _, hi = t.slope_interval()
    assert hi - t.slope == pytest.approx(st.norm.ppf(0.975) * t.slope_se)


def test_scatter_beyond_the_seeds_widens_the_interval():
    y = np.array([0.0, 3.0, -2.0, 4.0, -1.0])
    t = fit(BODY, y, [0.1] * 5)
    assert t.scale > 100
    assert t.quantile == pytest.approx(st.t.ppf(0.975, 3))


def _coverage(rng: np.random.Generator, ladders: int, seeds: int | None) -> float:
    """Share of simulated ladders whose slope interval holds the true slope -2: each rung's effect the mean
    of ``seeds`` paired differences with its se estimated from them (None: the true se, known)."""
    se_true = np.array([0.5, 0.6, 0.4, 0.7, 0.5])
    hits = 0
    for _ in range(ladders):
        if seeds is None:
            y, se, n = 1.0 - 2.0 * np.log10(BODY) + rng.normal(0, se_true), se_true, None
        else:
            d = rng.normal(0, se_true[:, None] * math.sqrt(seeds), (5, seeds))
            y, se, n = 1.0 - 2.0 * np.log10(BODY) + d.mean(1), d.std(1, ddof=1) / math.sqrt(seeds), [seeds] * 5
        lo, hi = fit(BODY, y, se, n).slope_interval()
        hits += lo <= -2.0 <= hi
    return hits / ladders


def test_the_slope_interval_covers_the_true_slope_at_its_level():
    """800 ladders each (binomial sd of the share ~0.8%): at least the nominal 95% within sampling error,
    and not so wide that it is useless (below 99.5%), with the seeds' se known and estimated from 3 seeds."""
    rng = np.random.default_rng(42)
    known = _coverage(rng, 800, None)
    estimated = _coverage(rng, 800, 3)
    assert 0.93 <= known <= 0.995, known
    assert 0.93 <= estimated <= 0.995, estimated


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="two rungs"):
        fit([1e4, 1e4], [1.0, 2.0], [0.1, 0.1])
    with pytest.raises(ValueError, match="standard error"):
        fit([1e4, 2e4], [1.0, 2.0], [0.1, 0.0])
