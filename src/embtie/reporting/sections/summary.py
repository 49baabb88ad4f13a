"""The report's opening: the training budget every figure describes, and a plain-language summary of
which strategies differ from the baseline, by how much and how sure the comparison is."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence

from embtie.comparison.design_file import status_line
from embtie.comparison.records import MetricVerdicts, SeedSummary
from embtie.decisions import Decision
from embtie.decisions.verdict import VERDICTS
from embtie.metrics import Metric, held_out, primary
from embtie.metrics import metric as declared
from embtie.reporting.document import Heading, Text, fmt
from embtie.reporting.sections.context import Block, ReportContext, p_cell


def _finite(values: Sequence[float | int | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def _median(values: Sequence[float | int | None]) -> float | None:
    vals = _finite(values)
    return statistics.median(vals) if vals else None


def _span(values: Sequence[float | int | None], fmt_one: Callable[[float], str], ranged: bool) -> str | None:
    """``fmt_one`` of the median, or with ``ranged`` and runs that differ "LO-HI (median M)"."""
    vals = _finite(values)
    if not vals:
        return None
    lo, hi, mid = min(vals), max(vals), statistics.median(vals)
    if lo == hi or not ranged:
        return fmt_one(mid)
    return f"{fmt_one(lo)}-{fmt_one(hi)} (median {fmt_one(mid)})"


def budget_text(ctx: ReportContext) -> str:
    """One sentence: steps, tokens and epochs per run (medians; their range too when runs stopped early),
    training time, seeds."""
    sums = [p.summary for p in ctx.comparison.per_run]
    stopped = [s for s in sums if s.stopped_early]
    steps = _span([s.steps for s in sums], lambda v: f"{int(v):,}", bool(stopped))
    seen = [s.tokens_seen for s in sums]
    tokens = _span(seen, lambda v: f"{int(v):,}", bool(stopped)) if _median(seen) else None
    epochs = _span([s.epochs for s in sums], lambda v: f"{v:.2g}", bool(stopped))
    secs = _median([s.train_time_s for s in sums])
    parts = [f"{steps} optimizer steps" if steps is not None else "an unknown number of steps"]
    if tokens:
        parts.append(f"{tokens} training tokens")
    if epochs is not None:
        parts.append(f"{epochs} epochs of the training data")
    when = f", about {secs:.3g} s of training each on {sums[0].device or '?'}" if secs else ""
    per = sorted({len(ctx.comparison.runs_of(n)) for n in ctx.names})
    seeds = f"{per[0]}" if len(per) == 1 else f"{per[0]}-{per[-1]}"
    if stopped:
        monitor = stopped[0].monitor or "metric"
        tail = (f"{len(stopped)} of {len(sums)} runs stopped early, when their validation {monitor} had stopped "
                "improving; the others ran to the step limit.")  # fmt: skip
        if len(stopped) == len(sums):
            tail = f"Every run stopped early, when its validation {monitor} had stopped improving."
        return f"Budget: runs trained {', '.join(parts)}{when}; {seeds} seed(s) per strategy. {tail}"
    return (
        f"Budget: every run trained {', '.join(parts)}{when}; {seeds} seed(s) per strategy. "
        "Everything below describes models at this budget, not converged ones: a longer run can change the ranking."
    )


def numerics_text(ctx: ReportContext) -> str:
    """Which CPU(s) and kernels made the runs, with the runs of each when they mixed several; runs whose
    summary.json predates the record are "not recorded"."""
    made_by = [p.summary.numerics for p in ctx.comparison.per_run]
    counts = Counter(n.text() if n is not None else "not recorded" for n in made_by)
    if len(counts) <= 1:
        made = next(iter(counts), "not recorded")  # no runs: a report redrawn from saved tables
        if made == "not recorded":
            return "Made on: not recorded (the runs predate embtie recording their CPU and kernels)."
        return (f"Made on: {made} (every run). Another CPU model or kernel path rounds differently, and "
                "per-seed values move with it.")  # fmt: skip
    parts = "; ".join(f"{text} ({n} run{'s' if n != 1 else ''})" for text, n in counts.most_common())
    return (f"Made on {len(counts)} different CPUs or kernel paths: {parts}. Runs made on different numerics "
            "are not bit-comparable: their differences include the machine's.")  # fmt: skip


def _p(p: float) -> str:
    cell = p_cell(p)
    return f"p {cell}" if cell.startswith("<") else f"p = {cell}"


def _size(d: Decision, label: str) -> str:
    return f"{d.mean:+.1f}% {label}" if d.relative else f"{d.mean:+.2f} {label}"


def _interval(d: Decision, equivalence: bool = False) -> str:
    """The interval a verdict rests on, at the level of its Holm step: the difference's, or the equivalence
    one (1 - 2a) for an equivalence."""
    lo, hi = d.tost_ci if equivalence else d.ci
    level = d.confidences()[1 if equivalence else 0]
    unit = "%" if d.relative else ""
    return f"{100 * level:.4g}% CI [{lo:+.2f}{unit}, {hi:+.2f}{unit}] over {d.n} paired seeds"


def _sentence(name: str, d: Decision, label: str, words: dict[str, str] | None = None) -> str:
    """One strategy against the baseline, in the words of its verdict (``words`` rewords 'better'/'worse',
    e.g. 'uses more ... than')."""
    margin = f"±{d.margin:g}{'%' if d.relative else ''}"
    if d.verdict in ("better", "worse"):
        said = (words or {}).get(d.verdict, f"is {d.verdict} than")
        return f"`{name}` {said} the baseline: {_size(d, label)}, {_interval(d)} ({d.test}, {_p(d.p_difference_holm)})."
    if d.verdict == "equivalent":
        return (f"`{name}` is equivalent to the baseline within {margin}: {_size(d, label)}, "
                f"{_interval(d, equivalence=True)} ({d.test}, {_p(d.p_equivalence_holm)}).")  # fmt: skip
    if d.seeds_needed is not None:
        more = f"about {d.seeds_needed} paired seeds would decide it at this effect (80% power)"
    else:
        more = "more than 200 paired seeds would be needed at this effect and spread"
    return (f"`{name}`: {_size(d, label)}, {_interval(d)}; undecided: neither a difference nor equivalence "
            f"within {margin} is shown; {more}.")  # fmt: skip


def _primary(ctx: ReportContext) -> tuple[Metric, str]:
    """The metric the summary leads with and its name."""
    metric = primary(ctx.rows, ctx.comparison.metric)
    return metric, metric.label_in(ctx.comparison.captioning)


def choice_lines(ctx: ReportContext) -> list[str]:
    """The answer first: which strategy to use (the primary metric's choice among all the strategies,
    ``comparison.choice``), then on its own line whether the comparison is confirmatory or exploratory
    (``comparison.design_file``); [] for a comparison decided before choices were made."""
    metric, _ = _primary(ctx)
    v = ctx.comparison.verdicts.get(metric.key)
    if v is None or v.choice is None:
        return []
    runs = [ctx.out_dir / "runs" / r.strategy / f"seed{r.seed}" for r in ctx.rows]
    return [f"Which to use: {v.choice['sentence']}", status_line(ctx.out_dir, runs, ctx.comparison.family)]


def plain_summary(ctx: ReportContext) -> list[str]:
    """The choice and the design's status (``choice_lines``), then sentences, one per strategy compared
    with the baseline (decided ones first), and the tally."""
    metric, label = _primary(ctx)
    base = _baseline_summary(ctx, metric)
    if base.n == 0:
        return [f"There is no baseline (`{ctx.baseline}`) in this comparison, so no strategy is compared with one."]
    mean = fmt(base.mean, metric.digits)
    lines = [*choice_lines(ctx), f"Baseline `{ctx.baseline}`: {label} {mean} (mean over seeds)."]
    v = ctx.comparison.verdicts.get(metric.key)
    if v is None:
        n = len({r.seed for r in ctx.rows if r.strategy == ctx.baseline})
        return [*lines, f"No strategy has two seeds paired with the baseline's yet, so every one is undecided, "
                        f"{n} paired seed{'' if n == 1 else 's'} (a paired test needs two)."]  # fmt: skip
    decided = _in_order(v)
    lines += [_sentence(n, d, label) for n, d in decided]
    groups = {k: [n for n, d in decided if d.verdict == k] for k in VERDICTS}
    tally = [f"{k}: {', '.join(groups[k])}" for k in VERDICTS if groups[k]]
    lines.append(f"In short ({label}, margin {v.margin_text()}): " + "; ".join(tally) + ".")
    return lines + held_out_summary(ctx, metric, label) + vocab_usage_summary(ctx)


def held_out_summary(ctx: ReportContext, metric: Metric, label: str) -> list[str]:
    """The same verdicts on the held-out test split (``--test``): reported beside the validation ones,
    decided by the same paired tests, never used to stop or select; [] without test results."""
    test = held_out(metric.key)
    v = None if test is None else ctx.comparison.verdicts.get(test.key)
    if test is None or v is None:
        return []
    base = _baseline_summary(ctx, test)
    mean = "" if base.n == 0 else f" (`{ctx.baseline}`: {fmt(base.mean, test.digits)})"
    decided = _in_order(v)
    tally = [f"{k}: {', '.join(n for n, d in decided if d.verdict == k)}" for k in VERDICTS
             if any(d.verdict == k for _, d in decided)]  # fmt: skip
    return [f"On the test split (reported beside validation, never used to decide){mean}, test {label}, margin "
            f"{v.margin_text()}: " + "; ".join(tally) + "."]  # fmt: skip


def vocab_usage_summary(ctx: ReportContext) -> list[str]:
    """Sentences on vocabulary usage (distinct words in the outputs, Shalev et al.'s VU) against the
    baseline, where the comparison measured it (captioning, translation); [] otherwise."""
    v = ctx.comparison.verdicts.get("vu")
    base = _baseline_summary(ctx, declared("vu"))
    if v is None or base.n == 0:
        return []
    lines = [f"Vocabulary usage: `{ctx.baseline}`'s outputs use {fmt(base.mean, 0)} distinct words (mean over seeds)."]
    said = {"better": "uses more distinct words than", "worse": "uses fewer distinct words than"}
    return lines + [_sentence(n, d, declared("vu").label, said) for n, d in _in_order(v)]


def _baseline_summary(ctx: ReportContext, metric: Metric) -> SeedSummary:
    """The baseline's seed summary of ``metric`` (over no seeds when the comparison has no baseline)."""
    return SeedSummary.of(metric.values(ctx.rows, ctx.baseline))


def _in_order(v: MetricVerdicts) -> list[tuple[str, Decision]]:
    """The strategies' decisions, decided ones first, then by the size of the difference."""
    out = [(n, d) for n in v.decisions if (d := v.decision(n)) is not None]
    return sorted(out, key=lambda nd: (nd[1].verdict == "undecided", -abs(nd[1].mean)))


def summary(ctx: ReportContext) -> list[Block]:
    """The budget and the plain-language summary (the report's first section)."""
    data = [] if ctx.comparison.title is None else [Text(f"Data: {ctx.comparison.title}.")]
    lines = [budget_text(ctx), numerics_text(ctx), *plain_summary(ctx)]
    return [Heading("Summary"), *data, *[Text(s) for s in lines]]
