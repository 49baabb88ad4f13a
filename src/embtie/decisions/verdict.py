"""Four verdicts instead of three. For each strategy against the baseline, from its paired seeds:

- **equivalent**: the equivalence test (TOST) rejects "|difference| >= margin", i.e. the 1 - 2a interval
  lies inside ± the margin;
- else **better** / **worse**: the paired t-test rejects "no difference" (the interval excludes 0),
  named by the direction in which the metric improves;
- else **undecided**, with the seeds that would decide it at the observed effect (``power``).

**One error rate for the whole comparison.** The 2k tests of k strategies (a difference test and an
equivalence test each) form one family, tested by one step-down procedure at level a (``step_down``:
Holm's procedure with Shaffer's logical bound, Shaffer 1986): the j-th smallest of the 2k p-values
(j = 0, 1, ...) is compared with a / min(k, 2k - j) while the steps reject. A strategy's two null
hypotheses ("no difference", "|difference| >= margin") cannot both be true, so at most k of the 2k are
true at once and at most 2k - j remain untested at step j; with Bonferroni at each step, the probability
that the comparison prints *any* wrong verdict is at most a, under any dependence between the tests:

- a "better"/"worse" when the true difference is 0, or in the wrong direction;
- an "equivalent" when the true difference is at or beyond the margin.

(A wrong-direction verdict for a strategy whose true difference is at or beyond the margin implies its
one-sided equivalence test toward that margin rejects too, so each strategy brings at most one
error-making hypothesis; docs/decisions.md writes the argument out.) With one strategy the family's two
tests run at a each, as before; with several, the first k steps run at a/k. When both tests of a strategy
reject (its interval excludes 0 and lies inside the margin) the verdict is **equivalent**: both
statements are covered by the error rate, and the smaller-than-the-margin one is what a user acts on.

Each decision's intervals are drawn at the level of its own step (``step_levels``), so an interval
excludes 0 (or lies inside the margin) exactly when its test rejects. The verdict rests on the seeds
alone: with common random numbers every pair shares its evaluation sample, so the seed-to-seed spread of
the differences is the noise that matters; the evaluation-sample bootstrap is reported beside it, for the
noise of the sample itself. The same procedure decides any set of paired differences, e.g. all pairs of
the strategies compared (the choice among them: ``choice``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from embtie.decisions.paired import PairedDifference
from embtie.decisions.power import seeds_to_decide
from embtie.decisions.signflip import model_based, signflip_p

VERDICTS = ("better", "worse", "equivalent", "undecided")
ONE_FAMILY = "one-family"
"""the rule since 2026-11-28: all 2k tests one step-down family (``step_down``); any wrong verdict <= a."""
TWO_FAMILIES = "two-families"
"""the rule before: the difference tests and the equivalence tests each Holm-corrected on their own at a,
so a comparison's chance of any wrong verdict was bounded only by 2a. Folders decided under it keep it
(their design fixed it); ``rule_of`` reads which rule a saved comparison used."""
RULES = (ONE_FAMILY, TWO_FAMILIES)
FAMILY = {ONE_FAMILY: "one step-down over all tests", TWO_FAMILIES: "Holm"}
"""how a verdict's test was corrected, in the words the report prints after the test's name."""


def rule_of(saved: Mapping[str, object]) -> str:
    """The rule a saved comparison (its results.json) was decided under: its ``decision_rule``, else the
    rule of the files written before the key existed."""
    rule = saved.get("decision_rule", TWO_FAMILIES)
    return rule if isinstance(rule, str) and rule in RULES else TWO_FAMILIES


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
    p_signflip: float | None = None
    """the exact sign-flip p of the paired differences (``signflip``; None in older files)."""
    model_based: bool = False
    """a better/worse verdict no distribution-free sign test could reach with these pairs at its level."""

    def confidences(self) -> tuple[float, float]:
        """The confidence of ``ci`` and of ``tost_ci`` (older files: 1 - a and 1 - 2a)."""
        ci = self.ci_confidence if self.ci_confidence is not None else 1 - self.level
        tost = self.tost_confidence if self.tost_confidence is not None else 1 - 2 * self.level
        return ci, tost


def _bounds(m: int, true_at_most: int) -> list[int]:
    """Shaffer's bound at each step j of m hypotheses of which at most ``true_at_most`` can be true:
    min(true_at_most, m - j)."""
    return [min(true_at_most, m - j) for j in range(m)]


def holm(pvalues: list[float], true_at_most: int | None = None) -> list[float]:
    """Step-down adjusted p-values (a missing p counts as 1): the j-th smallest (j = 0, 1, ...) is
    multiplied by min(``true_at_most``, m - j) (Holm's m - j when ``true_at_most`` is None), made
    monotone, capped at 1. Written here rather than taken from statsmodels' ``multipletests`` (which
    gives Holm's numbers, tested) because that function runs a full garbage collection on every call,
    0.1 s each in a process that holds a model: the sequential simulation calls it thousands of times."""
    p = np.array([x if math.isfinite(x) else 1.0 for x in pvalues], dtype=float)
    order = np.argsort(p, kind="stable")
    bounds = _bounds(len(p), len(p) if true_at_most is None else true_at_most)
    adjusted = np.empty(len(p))
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, bounds[rank] * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def holm_levels(pvalues: list[float], level: float, true_at_most: int | None = None) -> list[float]:
    """The level each hypothesis was tested at by the step-down procedure at ``level`` (a missing p
    counts as 1): the j-th smallest p is compared with level / min(``true_at_most``, m - j) while the
    steps reject; every hypothesis from the first step that does not reject on is held to that step's
    level. An interval at confidence 1 - its level therefore excludes 0 exactly when its adjusted p
    (``holm``) is below ``level``: the interval printed beside a verdict is the one its test used."""
    p = [x if math.isfinite(x) else 1.0 for x in pvalues]
    order = sorted(range(len(p)), key=lambda i: p[i])
    bounds = _bounds(len(p), len(p) if true_at_most is None else true_at_most)
    out = [level] * len(p)
    stopped: float | None = None
    for rank, i in enumerate(order):
        step = level / bounds[rank]
        if stopped is None and not p[i] < step:
            stopped = step
        out[i] = step if stopped is None else stopped
    return out


@dataclass(frozen=True)
class StepDown:
    """The one family of a comparison: adjusted p-values and step levels of every difference test and
    every equivalence test, in the order of the strategies given."""

    p_difference: list[float]
    p_equivalence: list[float]
    level_difference: list[float]
    level_equivalence: list[float]


def step_down(p_difference: list[float], p_equivalence: list[float], level: float, rule: str = ONE_FAMILY) -> StepDown:
    """The 2k tests of k strategies as one family at ``level`` (module docstring): Holm's step-down
    with Shaffer's bound, at most k of the 2k nulls true at once; under ``TWO_FAMILIES`` each kind of
    test Holm-corrected on its own."""
    if rule == TWO_FAMILIES:
        return StepDown(holm(p_difference), holm(p_equivalence),
                        holm_levels(p_difference, level), holm_levels(p_equivalence, level))  # fmt: skip
    k = len(p_difference)
    both = [*p_difference, *p_equivalence]
    adjusted, levels = holm(both, true_at_most=k), holm_levels(both, level, true_at_most=k)
    return StepDown(adjusted[:k], adjusted[k:], levels[:k], levels[k:])


def decide_all(
    diffs: Mapping[str, PairedDifference],
    higher_is_better: bool,
    level: float = 0.05,
    with_power: bool = True,
    rule: str = ONE_FAMILY,
) -> dict[str, Decision]:
    """Decisions for every strategy's paired difference, all 2k tests one family at ``level``
    (``step_down``; ``rule`` TWO_FAMILIES: the rule before); ``with_power`` False leaves
    ``seeds_needed`` None (it costs a search over n)."""
    names = list(diffs)
    p_d, p_e = [diffs[k].p_difference() for k in names], [diffs[k].p_equivalence() for k in names]
    family = step_down(p_d, p_e, level, rule)
    p_diff, p_eq = family.p_difference, family.p_equivalence
    level_diff, level_eq = family.level_difference, family.level_equivalence
    out = {}
    for k, pd, pe, ld, le in zip(names, p_diff, p_eq, level_diff, level_eq):
        d = diffs[k]
        verdict, test = "undecided", "neither test rejects"
        if pe < level:
            verdict, test = "equivalent", f"paired TOST within {d.margin.text()}, {FAMILY[rule]}"
        elif pd < level:
            improved = (d.mean > 0) == higher_is_better
            verdict, test = ("better" if improved else "worse"), f"paired t-test, {FAMILY[rule]}"
        needed = None
        if verdict == "undecided" and with_power:  # at the level its step ran at (the family's, before)
            at = (le if abs(d.mean) < d.margin.value else ld) if rule == ONE_FAMILY else level
            needed = seeds_to_decide(d.mean, d.sd, d.margin.value, at)
        out[k] = Decision(verdict=verdict, n=d.n, mean=d.mean, ci=d.interval(1 - ld),
                          tost_ci=d.interval(1 - 2 * le), p_difference=d.p_difference(),
                          p_equivalence=d.p_equivalence(), p_difference_holm=pd, p_equivalence_holm=pe,
                          level=level, margin=d.margin.value, relative=d.margin.relative, seeds_needed=needed,
                          test=test, ci_confidence=1 - ld, tost_confidence=1 - 2 * le,
                          p_signflip=signflip_p(d.diffs), model_based=model_based(verdict, d.n, ld))  # fmt: skip
    return out
