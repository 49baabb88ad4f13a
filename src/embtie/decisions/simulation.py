"""How often a sequential design decides, at a measured spread: the design is replayed on comparisons
drawn from measured per-seed results, so that "the job decides with probability >= 90%" is a number
rather than a hope.

Two ways of drawing a comparison of n paired seeds from a measured table of observations (one
observation: every strategy's value for one seed under one machine's numerics):

- ``bootstrap``: n observations drawn with replacement from the table, each kept whole, so the
  correlation between strategies (the shared baseline) and any heavy tail of the measured spread are
  kept as measured;
- ``normal``: the log-values of each seed drawn from a multivariate normal with the table's mean and
  covariance of log-values (smooth, but no heavier tail than a normal).

The machine is one more source of noise: observations made under several numerics variants enter
the table side by side, so a spread that the machine widens widens every simulated comparison.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from embtie.decisions.margins import Margin
from embtie.decisions.sequential import SequentialDesign, replay
from embtie.decisions.verdict import VERDICTS


@dataclass(frozen=True)
class SimulatedDesign:
    """Verdict probabilities per strategy (``probabilities[strategy][verdict]``), the probability that
    every strategy is decided, and the mean number of paired seeds the design trained per strategy."""

    trials: int
    method: str
    probabilities: dict[str, dict[str, float]]
    all_decided: float
    mean_seeds: dict[str, float]


def _draw(
    rows: np.ndarray, n: int, method: str, rng: np.random.Generator
) -> np.ndarray:
    """(n, S) values of S strategies for n paired seeds, drawn from ``rows`` (m, S) of measured values."""
    if method == "bootstrap":
        return rows[rng.integers(0, rows.shape[0], size=n)]
    logs = np.log(rows)
    return np.exp(rng.multivariate_normal(logs.mean(axis=0), np.cov(logs, rowvar=False), size=n))


def simulate(
    observations: Sequence[Mapping[str, float]],
    baseline: str,
    design: SequentialDesign,
    margin: Margin,
    higher_is_better: bool = False,
    trials: int = 2000,
    method: str = "bootstrap",
    seed: int = 0,
) -> SimulatedDesign:
    """Replay ``design`` (``sequential.replay``, the code ``--until-decided`` runs) on ``trials``
    comparisons drawn from ``observations`` (each a mapping strategy -> value for one seed and one
    machine; every observation must hold every strategy). Deterministic for a given ``seed``."""
    if method not in ("bootstrap", "normal"):
        raise ValueError(f"method must be bootstrap or normal, got {method!r}")
    names = list(observations[0])
    others = [k for k in names if k != baseline]
    rows = np.array([[float(o[k]) for k in names] for o in observations], dtype=float)
    rng = np.random.default_rng(seed)
    counts: dict[str, Counter[str]] = {k: Counter() for k in others}
    seeds_used: dict[str, list[int]] = {k: [] for k in others}
    every = 0
    b = names.index(baseline)
    for _ in range(trials):
        values = _draw(rows, design.max_seeds, method, rng)
        per = {k: values[:, names.index(k)].tolist() for k in others}
        out = replay(design, per, values[:, b].tolist(), margin, higher_is_better, with_power=False)
        every += all(d.verdict != "undecided" for d in out.values())
        for k, d in out.items():
            counts[k][d.verdict] += 1
            seeds_used[k].append(d.n)
    probs = {k: {v: counts[k][v] / trials for v in VERDICTS} for k in others}
    return SimulatedDesign(
        trials=trials,
        method=method,
        probabilities=probs,
        all_decided=every / trials,
        mean_seeds={k: float(np.mean(seeds_used[k])) for k in others},
    )
