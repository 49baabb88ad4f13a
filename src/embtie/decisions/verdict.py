"""Four verdicts instead of three. For each strategy against the baseline, from its paired seeds:

- **equivalent**: the equivalence test (TOST) rejects "|difference| >= margin", i.e. the 1 - 2a interval
  lies inside ± margin;
- else **better** / **worse**: the paired t-test rejects "no difference" (the interval excludes 0),
  named by the direction in which the metric improves;
- else **undecided**, with the seeds that would decide it at the observed effect (``power``).

Each family of tests (difference, equivalence) is corrected for the several strategies compared with
one baseline by Holm's step-down procedure (Holm 1979), at level a: the overall
level of a single comparison, or the per-look level of a sequential design. The verdict rests on the
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
    out = {}
    for k, pd, pe in zip(names, p_diff, p_eq):
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
        out[k] = Decision(verdict=verdict, n=d.n, mean=d.mean, ci=d.interval(1 - level),
                          tost_ci=d.interval(1 - 2 * level), p_difference=d.p_difference(),
                          p_equivalence=d.p_equivalence(), p_difference_holm=pd, p_equivalence_holm=pe,
                          level=level, margin=d.margin.value, relative=d.margin.relative, seeds_needed=needed,
                          test=test)  # fmt: skip
    return out
