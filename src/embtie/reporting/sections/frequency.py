"""Output-vector norm against training frequency (Shalev et al., Figure 2)."""

from __future__ import annotations

import numpy as np

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table, Text, fmt
from embtie.reporting.sections.context import Block, ReportContext, ci


def _rho_row(ctx: ReportContext, n: str) -> list[str]:
    s = ctx.results["summary"][n]["rho_output_norm_freq"]
    rin = [x["rho_input_norm_freq"] for x in ctx.rows if x["strategy"] == n and x["rho_input_norm_freq"] is not None]
    return [n, ci(s, 2), fmt(float(np.mean(rin)) if rin else None)]


def norm_vs_frequency(ctx: ReportContext) -> list[Block]:
    """Spearman's rho of vector norm against train count, and the scatter plot (seed 0)."""
    heading = Heading("Output-vector norm against token frequency (Shalev et al., Figure 2)")
    if not all(ctx.seed0[n]["diag"].get("norm_frequency") for n in ctx.names):
        return [heading, Text("Not available: the task's vocabulary has no training counts.")]
    table = Table(
        ["strategy", "Spearman rho, output norm vs train count", "rho, input norm vs count (mean)"],
        [_rho_row(ctx, n) for n in ctx.names],
        "Shalev et al. report |rho| = 0.76-0.93 for learned target vectors (large norms for rare words in "
        "their Figure 2); here rho keeps its sign. '-' where the norms are constant "
        "(normalised or fixed rows).",
    )
    points = {
        n: {
            "counts": ctx.seed0[n]["arrays"]["counts"],
            "norms": ctx.seed0[n]["arrays"]["output_norms"],
            "rho": (ctx.seed0[n]["diag"]["norm_frequency"]["output"] or {}).get("rho"),
        }
        for n in ctx.names
    }
    figure = Figure(
        plots.norm_vs_frequency(points, ctx.out_dir / "norm_vs_frequency.png"),
        "Output-vector norm against training frequency, one dot per token, log axes, seed 0; rho = Spearman.",
        f"{ctx.cmd}  (one run: embtie analyze RUN_DIR)",
    )
    return [heading, table, figure]
