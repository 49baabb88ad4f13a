"""Word similarity of input vs output vectors (Shalev et al., Table 4)."""

from __future__ import annotations

from embtie.analysis.records import WordSimilarity
from embtie.comparison.records import SeedSummary
from embtie.reporting.document import Heading, Table, Text, fmt
from embtie.reporting.sections.context import Block, ReportContext


def _cell(values: list[float | None]) -> str:
    """Seed mean of Spearman's rho, with the standard deviation over seeds when there are several."""
    s = SeedSummary.of(values)
    if s.n == 0:
        return "-"
    return fmt(s.mean) if s.n == 1 else f"{fmt(s.mean)} ± {fmt(s.std)}"


def _rho(bench: WordSimilarity | None, side: str) -> float | None:
    """rho of one side ("input" or "output") of a benchmark's scores (None when the run lacks it)."""
    if bench is None:
        return None
    return (bench.input if side == "input" else bench.output).rho


def _skipped(ctx: ReportContext) -> list[str]:
    """The analysis's lines saying what word similarity skipped and why (each once, as sentences)."""
    lines = (ctx.seed0[n].diag.wordsim_skipped for n in ctx.names)
    return [line[0].upper() + line[1:] + "." for line in dict.fromkeys(x for x in lines if x)]


def word_similarity(ctx: ReportContext) -> list[Block]:
    """Spearman's rho against human judgements per benchmark, output / input vectors (mean ± std over the
    seeds), and coverage; nothing when the runs were analysed lightly (``--analysis light`` or ``none``)."""
    if any(ctx.seed0[n].diag.level != "full" for n in ctx.names):
        return []
    heading = Heading("Word similarity of input vs output vectors (Shalev et al., Table 4)")
    ws = {n: ctx.seed0[n].diag.wordsim for n in ctx.names}
    notes = _skipped(ctx)
    if not all(ws.values()):
        why = " ".join(notes) or (
            "Not available: it needs a word vocabulary with counts, and for translation an "
            "English target language (the benchmarks are English)."
        )
        return [heading, Text(why)]
    cov = next(iter(ws.values())) or {}
    benches = list(cov)
    wrows = []
    for n in ctx.names:
        runs = [p.diag.wordsim or {} for p in ctx.comparison.runs_of(n)]
        cells = [f"{n} ({len(runs)} seed{'s' if len(runs) > 1 else ''})"]
        for b in benches:
            side = {k: _cell([_rho(r.get(b), k) for r in runs]) for k in ("output", "input")}
            cells.append(f"{side['output']} / {side['input']}")
        wrows.append(cells)
    wrows.append(["coverage (pairs found)"] + [f"{cov[b].output.found}/{cov[b].output.total}" for b in benches])
    table = Table(
        ["strategy", *[f"{b}: output / input" for b in benches]],
        wrows,
        "Spearman rho between cosine similarities and human judgements, output vectors / input vectors "
        "(mean ± std over the seeds), over the pairs whose two words are in the vocabulary (last row). "
        "Fixed output rows are random: their rho is chance.",
    )
    return [heading, table, *(Text(n) for n in notes)]
