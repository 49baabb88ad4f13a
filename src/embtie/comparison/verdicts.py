"""The verdicts of a comparison: for every tested metric (perplexity; BLEU and vocabulary usage where
the runs decode), every strategy against the baseline from the seeds both have, paired by seed
(``embtie.decisions``): better, worse, equivalent within the metric's margin, or undecided with the
seeds that would decide it.

Without a sequential design every comparison is one look at level alpha (Holm over the strategies);
with one (``embtie compare --until-decided``) the verdicts are replayed look by look, so a comparison
decided at an earlier look keeps that verdict. The primary metric (perplexity for language models,
BLEU for translation and captioning; ``embtie.metrics.primary``) is the one the sequential design stops on.
The metrics themselves are declared in ``embtie.metrics``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

from embtie.comparison.records import MetricVerdicts, ResultRow
from embtie.decisions import Margin, SequentialDesign, decide_all, paired_difference
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
) -> MetricVerdicts | None:
    """The verdicts of ``metric`` for every strategy with >= 2 seeds paired with the baseline's (None
    when no strategy has them)."""
    strategies = [s for s in dict.fromkeys(r.strategy for r in rows) if s != baseline]
    pairs = {s: paired_values(rows, s, baseline, metric) for s in strategies}
    pairs = {s: p for s, p in pairs.items() if len(p[0]) >= 2}
    if margin.relative and any(b == 0 for _, base in pairs.values() for b in base):
        return None  # a percent of nothing: a baseline of 0 (no distinct words) has no relative difference
    if not pairs:
        return None
    if design is None:
        diffs = {s: paired_difference(a, b, margin) for s, (a, b) in pairs.items()}
        decisions = decide_all(diffs, metric.higher_is_better, alpha)
        n = max(d.n for d in decisions.values())
        k = len(decisions)
        text = f"one look at {n} paired seeds, level {alpha:g}, Holm over {k} strateg{'y' if k == 1 else 'ies'}"
    else:
        longest = max(pairs.values(), key=lambda p: len(p[1]))[1]  # the baseline's seeds, in order
        decisions = replay(design, {s: a for s, (a, _) in pairs.items()}, longest, margin, metric.higher_is_better)
        text = design.description() + ", Holm over the strategies at each look"
    return MetricVerdicts(metric=metric.key, label=metric.label, higher_is_better=metric.higher_is_better,
                          margin=margin.value, relative=margin.relative, design=text,
                          decisions={s: asdict(d) for s, d in decisions.items()})  # fmt: skip


def all_verdicts(
    rows: Sequence[ResultRow],
    baseline: str,
    margins: Mapping[str, Margin] | None = None,
    design: SequentialDesign | None = None,
    alpha: float = 0.05,
) -> dict[str, MetricVerdicts]:
    """The verdicts of every declared metric the runs have (``margins``: those that differ from the defaults)."""
    margins = margins_with(margins or {})
    out = {}
    for metric in METRICS:
        v = metric_verdicts(rows, baseline, metric, margins[metric.margin_key], design, alpha)
        if v is not None:
            out[metric.key] = v
    return out
