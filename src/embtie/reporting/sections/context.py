"""What every report section reads: the comparison and the values derived from it once."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from embtie.comparison.records import Comparison, ResultRow, RunRecord, SeedSummary
from embtie.decisions import Decision
from embtie.metrics import metric as declared
from embtie.reporting.document import Block as Block  # the sections' block type, re-exported
from embtie.reporting.document import fmt


@dataclass(frozen=True)
class ReportContext:
    comparison: Comparison
    """``embtie.comparison.collect``'s records (what results.json holds, and the arrays)."""
    out_dir: Path
    """the comparison's folder: the plots are written here."""
    cmd: str
    """the command that reproduces the comparison (figure captions)."""
    names: list[str]
    """the strategies, in report order."""
    seed0: dict[str, RunRecord]
    """the first seed's run of every strategy (per-run diagnostics are shown for one seed)."""
    rows: list[ResultRow]
    """one row per finished run (results.csv)."""
    baseline: str
    v: int
    """vocabulary size."""
    d: int
    """model width."""
    ln_v: float


Section: TypeAlias = Callable[[ReportContext], list[Block]]
"""A report section: the context in, the section's blocks (heading first) out."""


def make_context(comparison: Comparison, out_dir: Path) -> ReportContext:
    seed0 = _seed0(comparison)
    any_diag = next(iter(seed0.values())).diag
    return ReportContext(
        comparison=comparison,
        out_dir=out_dir,
        cmd=comparison.command,
        names=comparison.strategies,
        seed0=seed0,
        rows=comparison.rows,
        baseline=comparison.baseline,
        v=any_diag.vocab_size,
        d=any_diag.dim,
        ln_v=any_diag.step0.ln_v,
    )


def _seed0(comparison: Comparison) -> dict[str, RunRecord]:
    """The first seed's run of every strategy (per-run diagnostics are shown for one seed)."""
    out: dict[str, RunRecord] = {}
    for p in sorted(comparison.per_run, key=lambda p: p.seed):
        out.setdefault(p.strategy, p)
    return out


def seed_values(ctx: ReportContext, value: Callable[[ResultRow], float | None]) -> dict[str, list[float]]:
    """Per strategy, the per-seed ``value`` of its rows, rows without it left out."""
    return {n: [v for x in ctx.rows if x.strategy == n and (v := value(x)) is not None] for n in ctx.names}


def ci(s: SeedSummary, digits: int = 1) -> str:
    """A seed summary for a table cell: mean ± std [95% CI]."""
    if s.n == 0:
        return "-"
    if s.n == 1 or not math.isfinite(s.half_width):
        return f"{fmt(s.mean, digits)} (1 seed)"
    return f"{fmt(s.mean, digits)} ± {fmt(s.std, digits)} [{fmt(s.ci_low, digits)}, {fmt(s.ci_high, digits)}]"


def p_cell(p: float | None) -> str:
    """A p-value, the one way reports print them: three decimals, '< 0.001' below that, '-' when the
    test could not be run (e.g. one seed)."""
    if p is None or not math.isfinite(p):
        return "-"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


MORE_FEWER = {"better": "more", "worse": "fewer"}
"""verdict words for vocabulary usage, where 'more distinct words' is not a judgement."""


def decision(ctx: ReportContext, metric: str, strategy: str) -> Decision | None:
    """The verdict of ``strategy`` against the baseline on ``metric`` (None: not tested)."""
    v = ctx.comparison.verdicts.get(metric)
    return None if v is None else v.decision(strategy)


def verdict_cell(ctx: ReportContext, metric: str, strategy: str, words: dict[str, str] | None = None) -> str:
    """The verdict for a table cell (renamed by ``words``, e.g. better -> more), with the margin of an
    equivalence."""
    d = decision(ctx, metric, strategy)
    if d is None:
        return _too_few_seeds(ctx, metric, strategy)
    text = (words or {}).get(d.verdict, d.verdict)
    return f"{text} (±{d.margin:g}{'%' if d.relative else ''})" if d.verdict == "equivalent" else text


def _too_few_seeds(ctx: ReportContext, metric: str, strategy: str) -> str:
    """The verdict cell of a strategy with fewer than 2 seeds paired with the baseline's: "undecided, N
    seed(s)" (a paired test needs two), or "-" where it has no value of ``metric``, is the baseline, or has
    the seeds but no test (a relative margin of a baseline at 0)."""
    if strategy == ctx.baseline:
        return "-"
    value = declared(metric).value
    mine = {r.seed for r in ctx.rows if r.strategy == strategy and value(r) is not None}
    base = {r.seed for r in ctx.rows if r.strategy == ctx.baseline and value(r) is not None}
    n = len(mine & base)
    return "-" if not mine or n >= 2 else f"undecided, {n} paired seed{'' if n == 1 else 's'}"


def delta_cells(ctx: ReportContext, metric: str, strategy: str, words: dict[str, str] | None = None) -> list[str]:
    """Δ [CI] (the paired bootstrap over units), p (bootstrap / paired seeds, Holm) and the verdict of
    ``metric``, to its declared digits."""
    if strategy == ctx.baseline:
        return ["baseline", "-", "-"]
    test = ctx.comparison.bootstrap_of(metric, strategy)
    if test is None:
        return ["-", "-", "-"]
    digits = declared(metric).digits
    lo, hi = test.delta_ci
    delta = f"{test.delta:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"
    d = decision(ctx, metric, strategy)
    p_paired = None if d is None else d.p_difference_holm
    return [delta, f"{p_cell(test.p_value)} / {p_cell(p_paired)}", verdict_cell(ctx, metric, strategy, words)]
