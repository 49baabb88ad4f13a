"""Convergence speed: steps each strategy needs to reach the validation losses the baseline reaches at a
quarter, half and all of its training (Su 2023: "convergence speed was the slowest" for ln V / d init)."""

from __future__ import annotations

from embtie.analysis import convergence
from embtie.comparison.records import RunRecord, SeedSummary
from embtie.reporting.document import Heading, Table
from embtie.reporting.sections.context import Block, ReportContext, ci

FRACTIONS = (0.25, 0.5, 1.0)
MIN_VALIDATIONS = 4
"""the section needs runs validated at least this many times (train.eval_every)."""


def _valid(p: RunRecord) -> tuple[list[int], list[float]]:
    return p.curves.valid_steps, p.curves.valid


def steps_to_targets(ctx: ReportContext) -> list[Block]:
    """Per strategy, steps to reach each target loss (mean ± std [95% CI] over seeds that reach it)."""
    runs = {n: ctx.comparison.runs_of(n) for n in ctx.names}
    base = runs.get(ctx.baseline) or []
    if not base or any(len(_valid(p)[0]) < MIN_VALIDATIONS for ps in runs.values() for p in ps):
        return []
    b_steps, b_loss = convergence.mean_curve([_valid(p) for p in base])
    targets = convergence.targets_from_baseline(b_steps, b_loss, FRACTIONS)
    if not targets:
        return []
    rows = []
    for n in ctx.names:
        cells = []
        for t in targets:
            reached = [convergence.steps_to_reach(*_valid(p), t) for p in runs[n]]
            got = [r for r in reached if r is not None]
            cell = ci(SeedSummary.of(got), 0) if got else "not reached"
            if got and len(got) < len(reached):
                cell += f" ({len(got)} of {len(reached)} seeds)"
            cells.append(cell)
        rows.append([n, *cells])
    header = ["strategy"] + [
        f"steps to valid loss {t:.3f} ({ctx.baseline} at {f:.0%})" for t, f in zip(targets, FRACTIONS)
    ]
    return [
        Heading("Convergence speed"),
        Table(
            header,
            rows,
            f"Targets: {ctx.baseline}'s seed-mean validation loss at the validations nearest 25%, 50% and 100% of its "
            "steps. Steps are interpolated linearly between validations (resolution: the validation interval); "
            "mean ± std [95% CI] over the seeds that reach the target.",
        ),
    ]
