"""Output-vector norm against training frequency (Shalev et al., Figure 2)."""

from __future__ import annotations

import numpy as np

from embtie.comparison.records import RunRecord
from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table, Text, fmt
from embtie.reporting.sections.context import Block, ReportContext, ci, seed_values


def _points(p: RunRecord) -> plots.FrequencyScatter | None:
    """The first seed's output norms against training counts (None when the task has no counts)."""
    nf, counts = p.diag.norm_frequency, p.arrays.counts
    if nf is None or counts is None:
        return None
    return plots.FrequencyScatter(counts=counts, norms=p.arrays.output_norms, rho=nf.output.rho)


def _rho_row(ctx: ReportContext, n: str, rho_input: list[float]) -> list[str]:
    s = ctx.comparison.summary[n].rho_output_norm_freq
    return [n, ci(s, 2), fmt(float(np.mean(rho_input)) if rho_input else None)]


def norm_vs_frequency(ctx: ReportContext) -> list[Block]:
    """Spearman's rho of vector norm against train count, and the scatter plot (seed 0)."""
    heading = Heading("Output-vector norm against token frequency (Shalev et al., Figure 2)")
    points = {n: p for n in ctx.names if (p := _points(ctx.seed0[n])) is not None}
    if len(points) < len(ctx.names):
        return [heading, Text("Not available: the task's vocabulary has no training counts.")]
    rho_input = seed_values(ctx, lambda x: x.rho_input_norm_freq)
    table = Table(
        ["strategy", "Spearman rho, output norm vs train count", "rho, input norm vs count (mean)"],
        [_rho_row(ctx, n, rho_input[n]) for n in ctx.names],
        "Shalev et al. report |rho| = 0.76-0.93 for learned target vectors (large norms for rare words in "
        "their Figure 2); here rho keeps its sign. '-' where the norms are constant "
        "(normalised or fixed rows).",
    )
    figure = Figure(
        plots.norm_vs_frequency(points, ctx.out_dir / "norm_vs_frequency.png"),
        "Output-vector norm against training frequency, one dot per token, log axes, seed 0; rho = Spearman.",
        f"{ctx.cmd}  (one run: embtie analyze RUN_DIR)",
    )
    return [heading, table, figure]
