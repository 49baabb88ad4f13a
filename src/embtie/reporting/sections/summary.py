"""The report's opening: the training budget every figure describes, and a plain-language summary of
which strategies differ from the baseline, by how much and how sure the comparison is."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from embtie.comparison.records import BaselineTest, SeedSummary, StrategySummary
from embtie.reporting.document import Heading, Text, fmt
from embtie.reporting.sections.context import Block, ReportContext


def _median(values: list[float | int | None]) -> float | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return statistics.median(vals) if vals else None


def budget_text(ctx: ReportContext) -> str:
    """One sentence: steps, tokens and epochs per run, training time, seeds (medians over runs)."""
    sums = [p.summary for p in ctx.comparison.per_run]
    steps, tokens = _median([s.steps for s in sums]), _median([s.tokens_seen for s in sums])
    epochs, secs = _median([s.epochs for s in sums]), _median([s.train_time_s for s in sums])
    parts = [f"{int(steps):,} optimizer steps" if steps is not None else "an unknown number of steps"]
    if tokens:
        parts.append(f"{int(tokens):,} training tokens")
    if epochs is not None:
        parts.append(f"{epochs:.2g} epochs of the training data")
    when = f", about {secs:.3g} s of training each on {sums[0].device or '?'}" if secs else ""
    return (
        f"Budget: every run trained {', '.join(parts)}{when}; {ctx.comparison.seeds} seed(s) per strategy. "
        "Everything below describes models at this budget, not converged ones: a longer run can change the ranking."
    )


def _sentence(
    name: str, test: BaselineTest, metric: str, base_value: float, verdicts: dict[str, str] | None = None
) -> str:
    """One strategy against the baseline; ``verdicts`` rewords 'better'/'worse' (e.g. 'uses more ... than')."""
    lo, hi = test.delta_ci
    rel = test.delta / base_value if base_value else float("nan")
    size = f"{test.delta:+.{1 if metric == 'perplexity' else 2}f} {metric} ({rel:+.1%})"
    ci = f"95% CI [{lo:+.1f}, {hi:+.1f}]"
    if test.verdict in ("better", "worse"):
        said = (verdicts or {}).get(test.verdict, f"is {test.verdict} than")
        return f"`{name}` {said} the baseline: {size}, {ci}; both tests agree (p < 0.05)."
    p_seeds = test.p_seeds
    why = (
        "only one seed, so training noise is not measured"
        if p_seeds is None or not math.isfinite(p_seeds)
        else (f"the seed test gives p = {p_seeds:.2f}")
    )
    return f"`{name}`: {size}, {ci}; not a demonstrated difference ({why}, bootstrap p = {test.p_value:.2f})."


def plain_summary(ctx: ReportContext) -> list[str]:
    """Sentences, one per strategy compared with the baseline, most different first."""
    res = ctx.comparison
    mt = bool(res.bleu_tests)
    tests, metric = (res.bleu_tests, "BLEU-4" if res.captioning else "BLEU") if mt else (res.tests, "perplexity")
    base = _baseline_summary(ctx, lambda s: s.bleu if mt else s.valid_ppl)
    if not tests or base is None or base.n == 0:
        return ["There is no baseline (`tied`) in this comparison, so no strategy is compared with one."]
    base_value = base.mean
    lines = [f"Baseline `{ctx.baseline}`: {metric} {fmt(base_value, 2 if mt else 1)} (mean over seeds)."]
    order = _most_different_first(tests)
    lines += [_sentence(n, tests[n], metric, base_value) for n in order]
    better = [n for n in order if tests[n].verdict == "better"]
    worse = [n for n in order if tests[n].verdict == "worse"]
    lines.append(
        "In short: "
        + (f"better than {ctx.baseline}: {', '.join(better)}; " if better else f"nothing beat {ctx.baseline}; ")
        + (f"worse: {', '.join(worse)}; " if worse else "")
        + (f"within noise: {', '.join(n for n in order if n not in better + worse) or 'none'}.")
    )
    return lines + vocab_usage_summary(ctx)


def vocab_usage_summary(ctx: ReportContext) -> list[str]:
    """Sentences on vocabulary usage (distinct words in the outputs, Shalev et al.'s VU) against the
    baseline, where the comparison measured it per unit (captioning, translation); [] otherwise."""
    tests = ctx.comparison.vu_tests
    base = _baseline_summary(ctx, lambda s: s.vu)
    if not tests or base is None or base.n == 0:
        return []
    used = fmt(base.mean, 0)
    lines = [f"Vocabulary usage: `{ctx.baseline}`'s outputs use {used} distinct words (mean over seeds)."]
    said = {"better": "uses more distinct words than", "worse": "uses fewer distinct words than"}
    return lines + [_sentence(n, tests[n], "distinct words", base.mean, said) for n in _most_different_first(tests)]


def _baseline_summary(ctx: ReportContext, metric: Callable[[StrategySummary], SeedSummary]) -> SeedSummary | None:
    """The baseline's seed summary of ``metric`` (None when the comparison has no baseline)."""
    s = ctx.comparison.summary.get(ctx.baseline)
    return None if s is None else metric(s)


def _most_different_first(tests: dict[str, BaselineTest]) -> list[str]:
    """The strategies tested, real differences first, then by the size of the difference."""
    return sorted(tests, key=lambda n: (tests[n].verdict == "within noise", -abs(tests[n].delta)))


def summary(ctx: ReportContext) -> list[Block]:
    """The budget and the plain-language summary (the report's first section)."""
    return [Heading("Summary"), Text(budget_text(ctx)), *[Text(s) for s in plain_summary(ctx)]]
