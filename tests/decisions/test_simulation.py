"""The decision-probability simulation (embtie.decisions.simulation): clear effects are decided, a null
effect is rarely called a difference, and the result is a pure function of its seed."""

from __future__ import annotations

import numpy as np
import pytest

from embtie.decisions import Margin, SequentialDesign
from embtie.decisions.simulation import simulate

DESIGN = SequentialDesign(first=6, step=1, max_seeds=6)
MARGIN = Margin(1.0, relative=True)


def _observations(shift: dict[str, float], sd: float, n: int = 40, seed: int = 1) -> list[dict[str, float]]:
    """n seeds: tied ~ 400 * lognormal(0, 3%); other strategies = tied * (1 + shift) * lognormal(0, sd)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        tied = 400.0 * float(np.exp(rng.normal(0, 0.03)))
        obs = {"tied": tied}
        for k, s in shift.items():
            obs[k] = tied * (1 + s) * float(np.exp(rng.normal(0, sd)))
        out.append(obs)
    return out


@pytest.mark.parametrize("method", ["bootstrap", "normal"])
def test_clear_effects_are_decided(method):
    obs = _observations({"untied": -0.09, "l2norm": 0.0}, sd=0.002)
    sim = simulate(obs, "tied", DESIGN, MARGIN, trials=300, method=method)
    assert sim.probabilities["untied"]["better"] == 1.0
    assert sim.probabilities["l2norm"]["equivalent"] == 1.0
    assert sim.all_decided == 1.0
    assert sim.mean_seeds == {"untied": 6.0, "l2norm": 6.0}


def test_a_null_effect_outside_reach_is_rarely_called_a_difference():
    obs = _observations({"a": 0.0, "b": 0.0}, sd=0.05, n=400)  # spread far wider than the margin
    sim = simulate(obs, "tied", DESIGN, MARGIN, trials=1000, method="normal")
    wrong = max(sim.probabilities[k]["better"] + sim.probabilities[k]["worse"] for k in ("a", "b"))
    assert wrong <= 0.05 + 3 * (0.05 * 0.95 / 1000) ** 0.5
    assert sim.probabilities["a"]["equivalent"] < 0.05
    assert sim.all_decided < 0.1


def test_the_same_seed_gives_the_same_probabilities():
    obs = _observations({"untied": -0.02}, sd=0.02)
    one = simulate(obs, "tied", DESIGN, MARGIN, trials=200, seed=3)
    two = simulate(obs, "tied", DESIGN, MARGIN, trials=200, seed=3)
    assert one == two
    assert sum(one.probabilities["untied"].values()) == pytest.approx(1.0)
