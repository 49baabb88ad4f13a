"""The verdicts of a comparison: for every tested metric (perplexity; BLEU and vocabulary usage where
the runs decode), every strategy against the baseline from the seeds both have, paired by seed
(``embtie.decisions``): better, worse, equivalent within the metric's margin, or undecided with the
seeds that would decide it.

Without a sequential design every comparison is one look at level alpha; with one (``embtie compare
--until-decided``) the verdicts are replayed look by look, so a comparison decided at an earlier look keeps
that verdict. Each look's tests are one family (``embtie.decisions.verdict``: one step-down procedure over
every strategy's difference and equivalence tests, so any wrong verdict has probability <= alpha); folders
decided before that rule keep theirs (``rule``: results.json's ``decision_rule``, ``decisions.rule_of``).
The primary metric (perplexity for language models, BLEU for translation and captioning;
``embtie.metrics.primary``) is the one the sequential design stops on.
The metrics themselves are declared in ``embtie.metrics``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace

from embtie.comparison.choice import choice_to_json, primary_choice
from embtie.comparison.records import MetricVerdicts, ResultRow
from embtie.decisions import ONE_FAMILY, TWO_FAMILIES, Margin, SequentialDesign, decide_all, paired_difference
from embtie.decisions.sequential import replay
from embtie.metrics import METRICS, Metric, margins_with


def paired_values(
    rows: Sequence[ResultRow], strategy: str, baseline: str, metric: Metric
) -> tuple[list[float], list[float]]:
    """The strategy's and the baseline's per-seed values over the seeds both have, in seed order."""
    mine = {r.seed: metric.value(r) for r in rows if r.strategy == strategy}
    base = {r.seed: metric.value(r) for r in rows if r.strategy == baseline}
    seeds = sorted(s for s in mine if s in base and mine[s] is not None and base[s] is not None)
    return [float(mine[s]) for s in seeds], [float(base[s]) for s in seeds]  # type: ignore[arg-type]


def metric_verdicts(
    rows: Sequence[ResultRow],
    baseline: str,
    metric: Metric,
    margin: Margin,
    design: SequentialDesign | None,
    alpha: float = 0.05,
    rule: str = ONE_FAMILY,
) -> MetricVerdicts | None:
    """The verdicts of ``metric`` for every strategy with >= 2 seeds paired with the baseline's (None
    when no strategy has them), under the decision ``rule``."""
    strategies = [s for s in dict.fromkeys(r.strategy for r in rows) if s != baseline]
    pairs = {s: paired_values(rows, s, baseline, metric) for s in strategies}
    pairs = {s: p for s, p in pairs.items() if len(p[0]) >= 2}
    if margin.relative and any(b == 0 for _, base in pairs.values() for b in base):
        return None  # a percent of nothing: a baseline of 0 (no distinct words) has no relative difference
    if not pairs:
        return None
    if design is None:
        diffs = {s: paired_difference(a, b, margin) for s, (a, b) in pairs.items()}
        decisions = decide_all(diffs, metric.higher_is_better, alpha, rule=rule)
        n = max(d.n for d in decisions.values())
        k = len(decisions)
        text = f"one look at {n} paired seeds, level {alpha:g}, {_family(rule, k)}"
    else:
        longest = max(pairs.values(), key=lambda p: len(p[1]))[1]  # the baseline's seeds, in order
        design = replace(design, rule=rule)
        decisions = replay(design, {s: a for s, (a, _) in pairs.items()}, longest, margin, metric.higher_is_better)
        text = design.description() + f", {_family(rule)} at each look"
    return MetricVerdicts(metric=metric.key, label=metric.label, higher_is_better=metric.higher_is_better,
                          margin=margin.value, relative=margin.relative, design=text,
                          decisions={s: asdict(d) for s, d in decisions.items()})  # fmt: skip


def _family(rule: str, k: int | None = None) -> str:
    """How a look's tests were corrected, in the words of the verdict table's caption."""
    if rule == TWO_FAMILIES:
        over = "the strategies" if k is None else f"{k} strateg{'y' if k == 1 else 'ies'}"
        return f"Holm over {over}"
    tests = "all tests" if k is None else f"all {2 * k} tests of {k} strateg{'y' if k == 1 else 'ies'}"
    return f"one step-down family over {tests} (any wrong verdict <= the level)"


def primary_verdicts(
    rows: Sequence[ResultRow],
    baseline: str,
    metric: Metric,
    margin: Margin,
    design: SequentialDesign | None,
    alpha: float = 0.05,
) -> MetricVerdicts | None:
    """The primary metric's verdicts under the one-family rule: every pair of strategies decided in one
    family (``comparison.choice``), the choice read off it, and the baseline's pairs as the verdicts
    against the baseline (None when fewer than two strategies have two paired seeds)."""
    strategies = list(dict.fromkeys(r.strategy for r in rows))
    choice = primary_choice(rows, strategies, baseline, metric, margin, design, alpha)
    if choice is None:
        return None
    k = len(choice.pairs)
    looks = f"one look at {choice.n} paired seeds, level {alpha:g}" if design is None else design.description()
    text = (f"{looks}, every pair of the {len(choice.strategies)} strategies compared, "
            f"one step-down family over all {2 * k} tests (any wrong verdict <= the level)")  # fmt: skip
    return MetricVerdicts(metric=metric.key, label=metric.label, higher_is_better=metric.higher_is_better,
                          margin=margin.value, relative=margin.relative, design=text,
                          decisions={s: asdict(d) for s, d in choice.against(baseline).items()},
                          role="primary", choice=choice_to_json(choice, metric, margin))  # fmt: skip


def all_verdicts(
    rows: Sequence[ResultRow],
    baseline: str,
    margins: Mapping[str, Margin] | None = None,
    design: SequentialDesign | None = None,
    alpha: float = 0.05,
    rule: str = ONE_FAMILY,
    primary_key: str | None = None,
) -> dict[str, MetricVerdicts]:
    """The verdicts of every declared metric the runs have (``margins``: those that differ from the
    defaults), under the decision ``rule`` (a saved folder's: ``decisions.rule_of``). Under the
    one-family rule the ``primary_key`` metric (the one that decides) gets the choice among all the
    strategies and its verdicts from the same family; the others are labelled secondary."""
    margins = margins_with(margins or {})
    out = {}
    for metric in METRICS:
        margin = margins[metric.margin_key]
        if rule == ONE_FAMILY and metric.key == primary_key:
            v = primary_verdicts(rows, baseline, metric, margin, design, alpha)
        else:
            v = metric_verdicts(rows, baseline, metric, margin, design, alpha, rule)
            if v is not None and primary_key is not None:
                v = replace(v, role="secondary")
        if v is not None:
            out[metric.key] = v
    return out
