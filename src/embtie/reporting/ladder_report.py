"""The ladder's report (DIR/report.md, report.html, effect_vs_size.png): the rungs and their budgets, the
effect of every strategy at every rung with its interval and verdict, the rung at which each verdict was
decided, the weighted trend with its interval and where its sign flips, and the extrapolated rungs (the
trend's prediction there, marked as an extrapolation, with the GPU-hours a run of the rung would take)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from embtie.ladder.results import LadderResults, RungEffect
from embtie.ladder.trend import Trend
from embtie.reporting import ladder_plot
from embtie.reporting.document import Block, Figure, Heading, Report, Table, Text, fmt
from embtie.reporting.sections.matching import matching_blocks


def _si(n: float) -> str:
    for div, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g} {prefix}"
    return f"{n:.0f}"


def _hours(h: float | None) -> str:
    return "-" if h is None else f"{h:.2g}"


def _effect(e: RungEffect, unit: str) -> str:
    return f"{e.mean:+.2f}{unit} [{e.ci[0]:+.2f}, {e.ci[1]:+.2f}]"


def _rungs(r: LadderResults) -> list[Block]:
    rows = [[b.rung.value, " ".join(b.rung.overrides), f"{b.body:,}", f"{b.steps:,}", _si(b.tokens)] for b in r.rungs]
    return [
        Heading("Rungs"),
        Text(
            f"Every arm of a rung trains on {r.ladder.tokens_per_param:g} tokens per body (non-embedding) parameter "
            f"of the rung, in whole steps (`--tokens-per-param`; docs/ladders.md says why). Command: `{r.command}`"
        ),
        Table(["rung", "config", "body params", "steps", "tokens"], rows),
    ]


def _effects(r: LadderResults) -> list[Block]:
    m = r.metric
    assert m is not None
    names = [s for s in r.strategies if s != r.baseline]
    by = {(e.strategy, e.rung): e for e in r.effects}
    rows = []
    for b in r.rungs:
        cells = [b.rung.value, f"{b.body:,}"]
        for s in names:
            e = by.get((s, b.rung.value))
            cells.append("-" if e is None else f"{_effect(e, m.unit)} {e.verdict} (n={e.n})")
        rows.append(cells)
    return [
        Heading("Effect at each rung"),
        Text(
            f"{m.label} of each strategy minus {r.baseline}'s, mean over paired seeds "
            f"({'percent of ' + r.baseline if m.relative else 'absolute'}; "
            f"{'lower' if not m.higher_is_better else 'higher'} is better), with the interval its verdict rests "
            f"on (the rung's Holm step) and the verdict within ±{fmt(m.margin)}{m.unit}."
        ),
        Table(["rung", "body params", *names], rows),
    ]


def _decided(r: LadderResults) -> list[Block]:
    rows = []
    for s in [s for s in r.strategies if s != r.baseline]:
        effects = r.of(s)
        first = next((e for e in effects if e.verdict != "undecided"), None)
        trail = " → ".join(f"{e.rung}: {e.verdict}" for e in effects)
        wanted = ", ".join(
            f"{e.rung}: {e.seeds_needed}" for e in effects if e.verdict == "undecided" and e.seeds_needed
        )
        rows.append([s, first.rung if first else "none", trail, wanted or "-"])
    return [
        Heading("Where each verdict was decided"),
        Table(
            ["strategy", "first decided at", "verdicts along the ladder", "undecided: seeds that would decide"], rows
        ),
    ]


def _flip(r: LadderResults, s: str, t: Trend | None) -> str:
    effects = r.of(s)
    seen = [f"{a.rung}→{b.rung}" for a, b in itertools.pairwise(effects) if a.mean * b.mean < 0]
    where = "observed between rungs " + ", ".join(seen) if seen else "no observed sign change"
    zero = t.zero_crossing() if t is not None else None
    if zero is None:
        return where
    lo, hi = min(e.body for e in effects), max(e.body for e in effects)
    inside = "inside the ladder" if lo <= zero <= hi else "outside the ladder (an extrapolation)"
    return f"{where}; the trend crosses 0 at {_si(zero)} body params, {inside}"


def _trend(r: LadderResults) -> list[Block]:
    m = r.metric
    assert m is not None
    rows = []
    for s in [s for s in r.strategies if s != r.baseline]:
        t = r.trend(s)
        if t is None:
            rows.append([s, "-", "-", "-", "fewer than two rungs with 2+ seeds"])
            continue
        lo, hi = t.slope_interval()
        moves = "the effect changes with size" if lo > 0 or hi < 0 else "no evidence that it changes with size"
        rows.append([s, f"{t.slope:+.2f}{m.unit} [{lo:+.2f}, {hi:+.2f}]", f"{t.scale:.2f}", f"{t.n}",
                     f"{moves}; {_flip(r, s, t)}"])  # fmt: skip
    return [
        Heading("Trend with size"),
        Text(
            "Weighted least squares of each rung's effect on log10(body params), weights 1/se² (se from the "
            "rung's paired seeds, widened to its own t interval); slope = change of the effect per tenfold body, "
            "95% interval; scale = max(1, reduced χ²): above 1 the rungs scatter more than their seeds say and "
            "the interval is widened by it (ladder/trend.py)."
        ),
        Table(["strategy", "slope per 10x body", "scale", "rungs", "reading"], rows),
    ]


def _beyond(r: LadderResults) -> list[Block]:
    m = r.metric
    if not r.beyond or m is None:
        return []
    names = [s for s in r.strategies if s != r.baseline]
    trends = {s: r.trend(s) for s in names}
    rows = []
    for b in r.beyond:
        cells = [b.rung.value, f"{b.body:,}", _si(b.tokens), _hours(r.gpu_hours.get(b.rung.value))]
        for s in names:
            t = trends[s]
            mean, lo, hi = t.predict(b.body) if t is not None else (math.nan,) * 3
            cells.append("-" if t is None else f"{mean:+.2f}{m.unit} [{lo:+.2f}, {hi:+.2f}] (extrapolation)")
        rows.append(cells)
    return [
        Heading("Beyond this machine: extrapolation"),
        Text(
            f"Rungs not trained: what each fitted trend predicts there (95% interval of the line, an extrapolation "
            f"past the measured rungs, valid only if the trend stays straight in log size), and the {r.gpu.upper()} "
            "GPU-hours the rung's grid would take (`embtie plan`: training only, one GPU)."
        ),
        Table(["rung", "body params", "tokens per run", f"{r.gpu} GPU-hours", *names], rows),
    ]


def _matched(r: LadderResults) -> list[Block]:
    blocks: list[Block] = []
    for value, m in r.matching.items():
        blocks += [Heading(f"Matched arms at rung {value}", 3), *matching_blocks(m)[1:]]
    return [Heading("Matched arms"), *blocks] if blocks else []


def build(r: LadderResults, out_dir: Path) -> Report:
    """The ladder's report; its figure is written to ``out_dir``."""
    report = Report(f"Ladder {r.ladder.text()} on {r.preset}: {', '.join(r.strategies)} against {r.baseline}")
    report.add(*_rungs(r), *_matched(r))
    if r.metric is None or not r.effects:
        report.add(
            Text(f"No rung has finished yet: run the same command to train them (each strategy against {r.baseline}).")
        )
        return report
    figure = ladder_plot.effect_vs_size(r, Path(out_dir) / "effect_vs_size.png")
    report.add(
        *_effects(r),
        *_decided(r),
        *_trend(r),
        Figure(
            figure,
            "effect against body size: rungs with their intervals, the weighted trend and its 95% band; "
            "dashed and hollow: the extrapolation",
            r.command + " --report-only",
        ),
        *_beyond(r),
    )
    return report
