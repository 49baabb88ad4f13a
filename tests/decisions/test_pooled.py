"""Pooling over machines (machine as a fixed block) against statsmodels' OLS with block dummies, one
machine reducing to the paired t-test, and the confirmation of a verdict on fresh seeds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import statsmodels.api as sm

from embtie.decisions import Margin, decide_all, paired_difference
from embtie.decisions.pooled import blocked_difference, confirmation

MARGIN = Margin(0.5)


def test_one_machine_is_the_paired_t_test():
    rng = np.random.default_rng(0)
    a, b = list(rng.normal(1.0, 1.0, 6)), list(rng.normal(0.0, 1.0, 6))
    pooled, plain = blocked_difference({"epyc": (a, b)}, MARGIN), paired_difference(a, b, MARGIN)
    assert pooled.mean == pytest.approx(plain.mean) and pooled.se == pytest.approx(plain.se)
    assert pooled.p_difference() == pytest.approx(plain.p_difference())
    assert pooled.interval(0.95) == pytest.approx(plain.interval(0.95))


def test_machines_as_blocks_match_a_regression_on_block_dummies():
    """With equal seeds per machine the unweighted mean of machine means is OLS's estimate of the common
    difference in d ~ 1 + machine (effects coding), its standard error and its t test with N - M df."""
    rng = np.random.default_rng(1)
    by = {m: (list(rng.normal(0.4 + shift, 0.3, 5)), [0.0] * 5) for m, shift in (("epyc", 0.0), ("xeon", 0.5))}
    pooled = blocked_difference(by, MARGIN)
    d = np.array(pooled.diffs)
    effects = np.array([1.0 if b == "epyc" else -1.0 for b in pooled.blocks])
    fit = sm.OLS(d, sm.add_constant(effects)).fit()
    assert pooled.mean == pytest.approx(fit.params[0])
    assert pooled.se == pytest.approx(fit.bse[0])
    assert pooled.df == fit.df_resid == 8
    assert pooled.p_difference() == pytest.approx(fit.pvalues[0])


def test_pooled_differences_decide_like_any_other():
    rng = np.random.default_rng(2)
    by = {m: (list(rng.normal(2.0, 0.3, 4)), [0.0] * 4) for m in ("epyc", "xeon")}
    out = decide_all({"s": blocked_difference(by, MARGIN)}, higher_is_better=True)
    assert out["s"].verdict == "better" and out["s"].n == 8


def test_a_fresh_verdict_confirms_contradicts_or_leaves_undecided():
    base = decide_all({"s": paired_difference([2.0, 2.1, 1.9, 2.05], [0.0] * 4, MARGIN)}, True)["s"]
    same, undecided = dataclasses.replace(base), dataclasses.replace(base, verdict="undecided")
    flipped = dataclasses.replace(base, verdict="worse", ci=(-2.2, -1.8))
    equivalent = dataclasses.replace(base, verdict="equivalent", ci=(-0.1, 0.1))
    small_but_real = dataclasses.replace(base, verdict="better", ci=(0.1, 0.3))
    assert confirmation(base, same) == "confirmed"
    assert confirmation(base, undecided) == "undecided"
    assert confirmation(base, flipped) == "contradicted"
    assert confirmation(base, equivalent) == "contradicted"  # the original's interval lies beyond the margin
    assert confirmation(equivalent, small_but_real) == "confirmed"  # real but inside the margin: both hold
