"""The answer a comparison ends with: which strategy to use, on its primary metric (``decisions.choice``).

Every pair of strategies is decided in one family on the primary metric, so the verdicts against the
baseline that the report's tables print for that metric are the baseline's pairs of the same family
(one error rate for everything the comparison decides on it). Parameters learned break a tie between
equivalent strategies, and the sentence says so."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from embtie.comparison.records import ResultRow
from embtie.decisions import Margin, SequentialDesign
from embtie.decisions.choice import Choice, decide_choice, replay_choice, sentence
from embtie.metrics import Metric


def _series(rows: Sequence[ResultRow], strategy: str, metric: Metric) -> list[tuple[int, float]]:
    return sorted((r.seed, float(v)) for r in rows if r.strategy == strategy and (v := metric.value(r)) is not None)


def values_by_strategy(rows: Sequence[ResultRow], strategies: Sequence[str], metric: Metric) -> dict[str, list[float]]:
    """Every strategy's per-seed values in seed order, each the first seeds of the longest series (the
    rounds of a sequential design add seeds in order), so that the k-th values of any two strategies come
    from the same seed (common random numbers)."""
    series = {s: _series(rows, s, metric) for s in strategies}
    seeds = [seed for seed, _ in max(series.values(), key=len)] if series else []
    out: dict[str, list[float]] = {}
    for s, pts in series.items():
        mine = dict(pts)
        aligned: list[float] = []
        for seed in seeds:  # a strategy's seeds are the first of the longest's (the rounds add seeds in order)
            if seed not in mine:
                break
            aligned.append(mine[seed])
        out[s] = aligned
    return out


def costs_of(rows: Sequence[ResultRow], strategies: Sequence[str]) -> dict[str, float] | None:
    """Learned parameters of each strategy (the tie-break among equals), None when any is unknown."""
    out = {}
    for s in strategies:
        known = [r.params_learned for r in rows if r.strategy == s and r.params_learned is not None]
        if not known:
            return None
        out[s] = float(statistics.mean(known))
    return out


def primary_choice(
    rows: Sequence[ResultRow],
    strategies: Sequence[str],
    baseline: str,
    metric: Metric,
    margin: Margin,
    design: SequentialDesign | None,
    alpha: float = 0.05,
) -> Choice | None:
    """The choice among ``strategies`` (the baseline first, so its pairs read strategy - baseline) on
    ``metric``; None when fewer than two strategies have two paired seeds."""
    order = [baseline, *[s for s in strategies if s != baseline]]
    values = {s: v for s, v in values_by_strategy(rows, order, metric).items() if len(v) >= 2}
    if baseline not in values or len(values) < 2:
        return None
    if margin.relative and any(x == 0 for v in values.values() for x in v):
        return None
    costs = costs_of(rows, list(values))
    if design is None:
        return decide_choice(values, margin, metric.higher_is_better, alpha, costs)
    return replay_choice(design, values, margin, metric.higher_is_better, costs)


def choice_to_json(choice: Choice, metric: Metric, margin: Margin) -> dict[str, Any]:
    """The choice as results.json keeps it: the sentence, the decided set, the candidates, every pair."""
    from dataclasses import asdict

    return {
        "sentence": sentence(choice, metric.label, margin, "parameters learned"),
        "use": list(choice.use),
        "candidates": list(choice.candidates),
        "decided": choice.decided,
        "pairs": {f"{a} vs {b}": asdict(d) for (a, b), d in choice.pairs.items()},
    }
