"""Paired differences over seeds against scipy's and statsmodels' own tests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.weightstats import ttost_paired

from embtie.decisions import Margin, paired_difference, parse_margins
from embtie.errors import ConfigError
from embtie.metrics import DEFAULT_MARGINS

A = [101.0, 99.5, 103.2, 98.7, 100.9]
B = [102.5, 101.0, 104.1, 100.2, 101.5]


def test_absolute_differences_match_scipy_paired_t_test():
    d = paired_difference(A, B, Margin(0.5))
    assert d.diffs == pytest.approx(tuple(a - b for a, b in zip(A, B)))
    assert d.p_difference() == pytest.approx(st.ttest_rel(A, B).pvalue)
    lo, hi = d.interval(0.95)
    ref = st.ttest_rel(A, B).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((ref.low, ref.high))


def test_equivalence_p_value_matches_statsmodels_tost():
    d = paired_difference(A, B, Margin(2.0))
    p_ref, _, _ = ttost_paired(np.array(A), np.array(B), -2.0, 2.0)
    assert d.p_equivalence() == pytest.approx(p_ref)
    # equivalence at level a exactly when the 1 - 2a interval lies inside the margin
    for a in (0.01, 0.05, 0.1):
        lo, hi = d.interval(1 - 2 * a)
        assert (d.p_equivalence() < a) == (lo > -2.0 and hi < 2.0)


def test_relative_margin_uses_percent_of_the_baseline():
    d = paired_difference([99.0, 202.0], [100.0, 200.0], Margin(1.0, relative=True))
    assert d.diffs == pytest.approx((-1.0, 1.0))
    assert d.mean == pytest.approx(0.0) and d.n == 2


def test_degenerate_cases():
    one = paired_difference([1.0], [2.0], Margin(0.5))
    assert math.isnan(one.p_difference()) and math.isnan(one.interval(0.95)[0])
    same = paired_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], Margin(0.5))
    assert same.p_difference() == 1.0 and same.p_equivalence() == 0.0 and same.interval(0.9) == (0.0, 0.0)
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([1.0, 2.0], [1.0], Margin(0.5))


def test_margins_parse_and_refuse_nonsense():
    m = parse_margins("valid_ppl=2%,bleu=0.3", DEFAULT_MARGINS)
    assert m["valid_ppl"] == Margin(2.0, relative=True) and m["bleu"] == Margin(0.3)
    assert m["vu"] == Margin(5.0, relative=True)  # untouched default
    assert parse_margins("bleu=1e-1", DEFAULT_MARGINS)["bleu"] == Margin(0.1)
    with pytest.raises(ConfigError, match="no such tested metric"):
        parse_margins("chrf=1", DEFAULT_MARGINS)
    with pytest.raises(ConfigError, match="METRIC=VALUE"):
        parse_margins("bleu", DEFAULT_MARGINS)
    with pytest.raises(ConfigError, match="must be > 0"):
        parse_margins("bleu=0", DEFAULT_MARGINS)


def test_pairing_measures_the_variance_the_shared_seed_removes():
    from embtie.decisions.pairing import pairing

    rng = np.random.default_rng(0)
    common = rng.normal(0, 10, 400)  # what the seed does to both strategies alike
    base = 200 + common + rng.normal(0, 2, 400)
    mine = 196 + common + rng.normal(0, 2, 400)
    p = pairing(list(mine), list(base))
    assert p.correlation > 0.9 and p.variance_removed > 0.9
    assert p.sd_unpaired == pytest.approx(100 * np.sqrt(mine.var(ddof=1) + base.var(ddof=1)) / base.mean())
    independent = pairing(list(196 + rng.normal(0, 10, 400)), list(base))
    assert abs(independent.correlation) < 0.15 and abs(independent.variance_removed) < 0.2
    assert math.isnan(pairing([1.0, 2.0], [1.0, 2.0]).correlation)
