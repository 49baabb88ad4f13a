"""Four verdicts instead of three. For each strategy against the baseline, from its paired seeds:

- **equivalent**: the equivalence test (TOST) rejects "|difference| >= margin", i.e. the 1 - 2a interval
  lies inside ± margin;
- else **better** / **worse**: the paired t-test rejects "no difference" (the interval excludes 0),
  named by the direction in which the metric improves;
- else **undecided**, with the seeds that would decide it at the observed effect (``power``).

Each family of tests (difference, equivalence) is corrected for the several strategies compared with
one baseline by Holm's step-down procedure (Holm 1979), at level a: the overall
level of a single comparison, or the per-look level of a sequential design. Each decision's intervals
are drawn at the level of its own Holm step (``holm_levels``), so an interval excludes 0 (or lies inside
the margin) exactly when its test rejects. The verdict rests on the
seeds alone: with common random numbers every pair shares its evaluation sample, so the seed-to-seed
spread of the differences is the noise that matters; the evaluation-sample bootstrap is reported beside
it, for the noise of the sample itself."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from embtie.decisions.paired import PairedDifference
from embtie.decisions.power import seeds_to_decide

VERDICTS = ("better", "worse", "equivalent", "undecided")


@dataclass(frozen=True)
class Decision:
    """The verdict of one strategy against the baseline, with what it rests on."""

    verdict: str
    n: int
    """paired seeds used."""
    mean: float
    """mean difference (percent of the baseline for a relative margin)."""
    ci: tuple[float, float]
    """two-sided 1 - a interval of the mean difference."""
    tost_ci: tuple[float, float]
    """1 - 2a interval (equivalence when inside ± margin)."""
    p_difference: float
    p_equivalence: float
    p_difference_holm: float
    p_equivalence_holm: float
    level: float
    """a: the level every test of this decision ran at."""
    margin: float
    relative: bool
    seeds_needed: int | None
    """for an undecided comparison, the seeds that would decide it with 80% probability."""
    test: str
    """which test gave the verdict, in words."""
    ci_confidence: float | None = None
    """the confidence of ``ci``: 1 - the level of its Holm step (``holm_levels``); None in files written
    before intervals followed Holm (their ``ci`` is at 1 - ``level``)."""
    tost_confidence: float | None = None
    """the confidence of ``tost_ci``: 1 - 2 x the level of its Holm step; None: 1 - 2 ``level``."""

    def confidences(self) -> tuple[float, float]:
        """The confidence of ``ci`` and of ``tost_ci`` (older files: 1 - a and 1 - 2a)."""
        ci = self.ci_confidence if self.ci_confidence is not None else 1 - self.level
        tost = self.tost_confidence if self.tost_confidence is not None else 1 - 2 * self.level
        return ci, tost


def holm(pvalues: list[float]) -> list[float]:
    """Holm-adjusted p-values (a missing p counts as 1): the i-th smallest is multiplied by (m - i),
    made monotone, capped at 1. Written here rather than taken from statsmodels' ``multipletests``
    (which gives the same numbers, tested) because that function runs a full garbage collection on
    every call, 0.1 s each in a process that holds a model: the sequential simulation calls it
    thousands of times."""
    p = np.array([x if math.isfinite(x) else 1.0 for x in pvalues], dtype=float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def holm_levels(pvalues: list[float], level: float) -> list[float]:
    """The level each hypothesis was tested at by Holm's step-down procedure at ``level`` (a missing p
    counts as 1): the k-th smallest p (k = 0, 1, ...) is compared with level / (m - k) while the steps
    reject; every hypothesis from the first step that does not reject on is held to that step's level.
    An interval at confidence 1 - its level therefore excludes 0 exactly when its Holm-adjusted p
    (``holm``) is below ``level``: the interval printed beside a verdict is the one its test used."""
    p = [x if math.isfinite(x) else 1.0 for x in pvalues]
    order = sorted(range(len(p)), key=lambda i: p[i])
    m = len(p)
    out = [level] * m
    stopped: float | None = None
    for rank, i in enumerate(order):
        step = level / (m - rank)
        if stopped is None and not p[i] < step:
            stopped = step
        out[i] = step if stopped is None else stopped
    return out


def decide_all(
    diffs: Mapping[str, PairedDifference],
    higher_is_better: bool,
    level: float = 0.05,
    with_power: bool = True,
) -> dict[str, Decision]:
    """Decisions for every strategy's paired difference, Holm-corrected across them at ``level``;
    ``with_power`` False leaves ``seeds_needed`` None (it costs a search over n)."""
    names = list(diffs)
    p_diff = holm([diffs[k].p_difference() for k in names])
    p_eq = holm([diffs[k].p_equivalence() for k in names])
    level_diff = holm_levels([diffs[k].p_difference() for k in names], level)
    level_eq = holm_levels([diffs[k].p_equivalence() for k in names], level)
    out = {}
    for k, pd, pe, ld, le in zip(names, p_diff, p_eq, level_diff, level_eq):
        d = diffs[k]
        verdict, test = "undecided", "neither test rejects"
        if pe < level:
            verdict, test = "equivalent", f"paired TOST within {d.margin.text()}, Holm"
        elif pd < level:
            improved = (d.mean > 0) == higher_is_better
            verdict, test = ("better" if improved else "worse"), "paired t-test, Holm"
        needed = None
        if verdict == "undecided" and with_power:
            needed = seeds_to_decide(d.mean, d.sd, d.margin.value, level)
        out[k] = Decision(verdict=verdict, n=d.n, mean=d.mean, ci=d.interval(1 - ld),
                          tost_ci=d.interval(1 - 2 * le), p_difference=d.p_difference(),
                          p_equivalence=d.p_equivalence(), p_difference_holm=pd, p_equivalence_holm=pe,
                          level=level, margin=d.margin.value, relative=d.margin.relative, seeds_needed=needed,
                          test=test, ci_confidence=1 - ld, tost_confidence=1 - 2 * le)  # fmt: skip
    return out
