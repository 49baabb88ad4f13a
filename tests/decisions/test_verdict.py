"""The four verdicts, Holm's correction across strategies, and the seeds an undecided comparison needs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from embtie.decisions import Margin, decide_all, paired_difference
from embtie.decisions.power import power_curve, seeds_to_decide

BASE = [100.0, 102.0, 98.0, 101.0, 99.0, 100.5]


PPL_MARGIN = Margin(1.0, relative=True)


def _diff(offsets):
    return paired_difference([b * (1 + o / 100) for b, o in zip(BASE, offsets)], BASE, PPL_MARGIN)


def test_clear_cases_get_their_verdicts_in_the_right_direction():
    diffs = {
        "much_lower": _diff([-10.0, -9.5, -10.5, -10.2, -9.8, -10.1]),
        "same": _diff([0.05, -0.04, 0.02, -0.03, 0.01, 0.0]),
        "noisy": _diff([3.0, -4.0, 2.5, -3.5, 1.0, -0.5]),
    }
    lower_is_better = decide_all(diffs, higher_is_better=False)
    assert lower_is_better["much_lower"].verdict == "better"
    assert lower_is_better["same"].verdict == "equivalent"
    assert lower_is_better["noisy"].verdict == "undecided"
    assert decide_all(diffs, higher_is_better=True)["much_lower"].verdict == "worse"
    noisy = lower_is_better["noisy"]
    assert noisy.seeds_needed is not None and noisy.seeds_needed > 6
    assert "TOST" in lower_is_better["same"].test and "t-test" in lower_is_better["much_lower"].test


def test_holm_matches_statsmodels():
    from statsmodels.stats.multitest import multipletests

    from embtie.decisions.verdict import holm

    rng = np.random.default_rng(1)
    for m in (1, 2, 5, 9):
        p = list(rng.uniform(0, 0.2, m))
        assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert holm([float("nan"), 0.01]) == pytest.approx([1.0, 0.02])


def test_all_tests_of_a_comparison_are_one_step_down_family_with_shaffers_bound():
    """The j-th smallest of the 2k p-values (differences and equivalences together) is multiplied by
    min(k, 2k - j), made monotone: at most k of the 2k nulls can be true at once."""
    rng = np.random.default_rng(0)
    diffs = {f"s{i}": paired_difference(list(rng.normal(0.3 * i, 1.0, 8)), [0.0] * 8, Margin(0.2)) for i in range(4)}
    out = decide_all(diffs, higher_is_better=True, level=0.05)
    raw = sorted([(d.p_difference, k, "d") for k, d in out.items()]
                 + [(d.p_equivalence, k, "e") for k, d in out.items()])
    k, running = len(out), 0.0
    for rank, (p, name, which) in enumerate(raw):
        running = max(running, min(1.0, min(k, 2 * k - rank) * p))
        got = out[name].p_difference_holm if which == "d" else out[name].p_equivalence_holm
        assert got == pytest.approx(running)


def _power(delta: float, sd: float, n: int, alpha: float, margin: float = 0.0) -> float:
    """The power at n seeds (``power_curve`` starts at n = 2)."""
    return float(power_curve(delta, sd, margin, alpha)[1][n - 2])


def test_power_matches_statsmodels_and_seeds_needed_reach_it():
    for delta, sd, n in ((0.5, 1.0, 10), (1.0, 2.0, 6), (0.2, 0.3, 12)):
        ref = TTestPower().power(effect_size=delta / sd, nobs=n, alpha=0.05, alternative="two-sided")
        assert _power(delta, sd, n, 0.05) == pytest.approx(ref, abs=1e-6)
    n = seeds_to_decide(0.8, 1.5, margin=0.5, alpha=0.05)
    assert _power(0.8, 1.5, n, 0.05) >= 0.8 > _power(0.8, 1.5, n - 1, 0.05)
    n_eq = seeds_to_decide(0.1, 0.5, margin=0.5, alpha=0.05)
    assert _power(0.1, 0.5, n_eq, 0.05, 0.5) >= 0.8 > _power(0.1, 0.5, n_eq - 1, 0.05, 0.5)
    # just inside the margin, equivalence is out of reach; at the margin, the difference test decides
    assert seeds_to_decide(0.49, 1.0, margin=0.5, alpha=0.05) is None
    assert seeds_to_decide(0.5, 1.0, margin=0.5, alpha=0.05) == seeds_to_decide(0.5, 1.0, margin=0.1, alpha=0.05)


def test_holm_levels_follow_the_steps_and_stop_where_holm_stops():
    from embtie.decisions.verdict import holm_levels

    # m = 3: 0.01 < 0.05/3 rejects; 0.03 >= 0.05/2 stops; 0.04 (< 0.05 alone) is held to the stopping level
    assert holm_levels([0.04, 0.01, 0.03], 0.05) == pytest.approx([0.025, 0.05 / 3, 0.025])
    assert holm_levels([0.001, 0.002], 0.05) == pytest.approx([0.025, 0.05])
    assert holm_levels([float("nan")], 0.05) == pytest.approx([0.05])


def test_printed_intervals_agree_with_the_holm_tests():
    """The interval beside a verdict is the one its test used: the difference interval excludes 0 exactly
    when the Holm-adjusted t-test rejects, the equivalence interval lies inside the margin exactly when the
    Holm-adjusted TOST rejects (a per-comparison 95% interval would exclude 0 beside 'undecided')."""
    rng = np.random.default_rng(3)
    seen_holm_matters = False
    for trial in range(300):
        m = int(rng.integers(2, 5))
        diffs = {
            f"s{i}": paired_difference(list(rng.normal(rng.uniform(-1.5, 1.5), 1.0, 5)), [0.0] * 5, Margin(0.5))
            for i in range(m)
        }
        for k, d in decide_all(diffs, higher_is_better=True, level=0.05, with_power=False).items():
            lo, hi = d.ci
            assert (lo > 0 or hi < 0) == (d.p_difference_holm < 0.05), (trial, k)
            tlo, thi = d.tost_ci
            assert (tlo > -0.5 and thi < 0.5) == (d.p_equivalence_holm < 0.05), (trial, k)
            c_diff, c_eq = d.confidences()
            assert diffs[k].interval(c_diff) == pytest.approx(d.ci)
            assert diffs[k].interval(c_eq) == pytest.approx(d.tost_ci)
            unadjusted = diffs[k].interval(0.95)
            seen_holm_matters |= (unadjusted[0] > 0 or unadjusted[1] < 0) and d.verdict == "undecided"
    assert seen_holm_matters  # the old 95% interval would have contradicted some verdicts


def test_decisions_of_older_files_read_their_intervals_at_the_family_level():
    d = decide_all({"a": _diff([-10.0, -9.5, -10.5, -10.2, -9.8, -10.1])}, higher_is_better=False)["a"]
    old = dataclasses.replace(d, ci_confidence=None, tost_confidence=None)
    assert old.confidences() == pytest.approx((0.95, 0.90))
    assert d.confidences() == pytest.approx((0.95, 0.90))  # one strategy: Holm's only step is the level itself
