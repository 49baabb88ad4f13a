"""The exact sign-flip p against hand counts and a brute-force enumeration, its Monte-Carlo estimate
above 16 pairs, and which verdicts are model-based."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from embtie.decisions.signflip import model_based, signflip_p, smallest_p


def _brute(d: list[float]) -> float:
    obs = abs(np.mean(d))
    pats = list(itertools.product([-1, 1], repeat=len(d)))
    return sum(abs(np.mean([s * x for s, x in zip(p, d)])) >= obs - 1e-12 for p in pats) / len(pats)


def test_all_positive_differences_reach_the_smallest_p_and_no_lower():
    assert signflip_p([1.0, 2.0, 3.0, 4.0]) == pytest.approx(0.125)  # only all-+ and all-- reach |mean| 2.5
    assert signflip_p([1.0, 1.0, 1.0, 1.0, 1.0]) == pytest.approx(0.0625)
    assert smallest_p(4) == 0.125 and smallest_p(5) == 0.0625 and smallest_p(1) == 1.0


def test_matches_a_brute_force_enumeration():
    rng = np.random.default_rng(0)
    for n in (2, 3, 6, 9):
        d = list(rng.normal(0.3, 1.0, n))
        assert signflip_p(d) == pytest.approx(_brute(d))


def test_above_sixteen_pairs_the_estimate_is_close_to_the_exact_value():
    rng = np.random.default_rng(1)
    d = list(rng.normal(0.4, 1.0, 20))
    exact = _exact_20(d)
    assert signflip_p(d) == pytest.approx(exact, abs=0.01)


def _exact_20(d: list[float]) -> float:
    """Exact p for 20 pairs in chunks (2^20 patterns)."""
    x = np.asarray(d)
    obs = abs(x.mean())
    hits = 0
    head = (1 - 2 * ((np.arange(2**10)[:, None] >> np.arange(10)) & 1)) @ x[:10]
    tail = (1 - 2 * ((np.arange(2**10)[:, None] >> np.arange(10)) & 1)) @ x[10:]
    for h in head:
        hits += int(np.sum(np.abs(h + tail) / 20 >= obs - 1e-12))
    return hits / 2**20


def test_verdicts_out_of_reach_of_a_sign_test_are_model_based():
    assert model_based("better", 4, 0.025)  # smallest sign-flip p 0.125 > 0.025
    assert model_based("worse", 5, 0.05)  # 0.0625 > 0.05
    assert not model_based("better", 6, 0.05)  # 0.03125 <= 0.05
    assert not model_based("undecided", 4, 0.025) and not model_based("equivalent", 4, 0.025)


def test_decisions_carry_the_sign_flip_p_and_say_when_they_are_model_based():
    from embtie.decisions import Margin, decide_all, paired_difference

    four = {"s": paired_difference([5.0, 5.2, 4.9, 5.1], [0.0] * 4, Margin(0.5))}
    d = decide_all(four, higher_is_better=True, level=0.05)["s"]
    assert d.verdict == "better" and d.p_signflip == pytest.approx(0.125) and d.model_based
    six = {"s": paired_difference([5.0, 5.2, 4.9, 5.1, 5.0, 4.8], [0.0] * 6, Margin(0.5))}
    d6 = decide_all(six, higher_is_better=True, level=0.05)["s"]
    assert d6.verdict == "better" and d6.p_signflip == pytest.approx(2 / 64) and not d6.model_based
