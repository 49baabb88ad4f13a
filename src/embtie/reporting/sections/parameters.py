"""Learned and fixed parameter counts per strategy (Shalev et al., Table 3)."""

from __future__ import annotations

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table, fmt
from embtie.reporting.sections.context import Block, ReportContext


def parameter_counts(ctx: ReportContext) -> list[Block]:
    """Learned (whole model / embedding and output layer) and fixed parameters, and the saving against untied."""
    pc = {n: ctx.seed0[n].diag.params for n in ctx.names}
    ref = pc.get("untied", pc.get(ctx.baseline))
    prow = []
    for n in ctx.names:
        c = pc[n]
        red = (ref.learned - c.learned) / ref.learned if ref else None
        prow.append(
            [
                n,
                fmt(c.learned),
                fmt(c.sharing_learned),
                fmt(c.fixed),
                f"{100 * red:.1f}%" if red is not None else "-",
            ]
        )
    refname = "untied" if "untied" in pc else ctx.baseline
    table = Table(
        [
            "strategy",
            "learned (model)",
            "learned (embedding + output layer)",
            "fixed",
            f"fewer learned than {refname}",
        ],
        prow,
    )
    figure = Figure(
        plots.parameter_counts(pc, ctx.out_dir / "parameters.png"),
        "Learned parameters (rest of model / embedding and output layer) and fixed ones per strategy.",
        ctx.cmd,
    )
    return [Heading("Learned and fixed parameters (Shalev et al., Table 3)"), table, figure]
