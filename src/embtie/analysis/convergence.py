"""Steps to reach a validation loss: how fast each strategy converges (Su 2023's convergence claim).

A run's validation curve is a list of (step, loss) points; the step at which it first reaches a target
loss is found by linear interpolation between the two validations around the crossing (the curve is
taken as piecewise linear between validations, so the resolution is the validation interval).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def steps_to_reach(steps: Sequence[float], losses: Sequence[float], target: float) -> float | None:
    """The first step at which the piecewise-linear curve through (steps, losses) is <= ``target``;
    None when it never is."""
    s, v = np.asarray(steps, dtype=float), np.asarray(losses, dtype=float)
    if s.size == 0:
        return None
    hit = np.nonzero(v <= target)[0]
    if hit.size == 0:
        return None
    i = int(hit[0])
    if i == 0:
        return float(s[0])
    s0, s1, v0, v1 = s[i - 1], s[i], v[i - 1], v[i]
    return float(s0 + (s1 - s0) * (v0 - target) / (v0 - v1))


def mean_curve(curves: Sequence[tuple[Sequence[float], Sequence[float]]]) -> tuple[np.ndarray, np.ndarray]:
    """(steps, mean loss) over runs at the validation steps all of them share."""
    common = sorted(set.intersection(*[set(map(float, s)) for s, _ in curves])) if curves else []
    means = [np.mean([dict(zip(map(float, s), v))[x] for s, v in curves]) for x in common]
    return np.asarray(common), np.asarray(means)


def targets_from_baseline(steps: np.ndarray, losses: np.ndarray, fractions: Sequence[float]) -> list[float]:
    """The baseline's mean validation loss at the validations nearest each fraction of its steps."""
    if steps.size == 0:
        return []
    out = []
    for f in fractions:
        i = int(np.argmin(np.abs(steps - f * steps[-1])))
        out.append(float(losses[i]))
    return out
