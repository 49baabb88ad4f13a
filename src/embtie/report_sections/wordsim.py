"""Word similarity of input vs output vectors (Shalev et al., Table 4)."""

from __future__ import annotations

from embtie.report import Heading, Table, Text, fmt
from embtie.report_sections.context import Block, ReportContext


def word_similarity(ctx: ReportContext) -> list[Block]:
    """Spearman's rho against human judgements per benchmark, output / input vectors (seed 0), and coverage."""
    heading = Heading("Word similarity of input vs output vectors (Shalev et al., Table 4)")
    ws = {n: ctx.seed0[n]["diag"].get("wordsim") for n in ctx.names}
    if not all(ws.values()):
        return [heading, Text("Not available: the task's vocabulary is not a word vocabulary with counts.")]
    benches = list(next(iter(ws.values())))
    wrows = []
    for n in ctx.names:
        cells = [n]
        for b in benches:
            e = ws[n][b]
            cells.append(f"{fmt(e['output']['rho'])} / {fmt(e['input']['rho'])}")
        wrows.append(cells)
    cov = next(iter(ws.values()))
    wrows.append(
        ["coverage (pairs found)"] + [f"{cov[b]['output']['found']}/{cov[b]['output']['total']}" for b in benches]
    )
    table = Table(
        ["strategy", *[f"{b}: output / input" for b in benches]],
        wrows,
        "Spearman rho between cosine similarities and human judgements, output vectors / input vectors "
        "(seed 0), over the pairs whose two words are in the vocabulary (last row).",
    )
    return [heading, table]
