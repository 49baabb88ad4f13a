"""How often each vocabulary row gets a gradient through the input and the output path (Press & Wolf)."""

from __future__ import annotations

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table
from embtie.reporting.sections.context import Block, ReportContext


def row_update_frequency(ctx: ReportContext) -> list[Block]:
    """Rows updated per batch through sharing.embed and through the output layer (seed 0), by frequency rank;
    nothing when some run's analysis left them out (``--analysis light`` or ``none``)."""
    ups = {}
    urows = []
    for n in ctx.names:
        ru, arrays = ctx.seed0[n].diag.row_updates, ctx.seed0[n].arrays
        inp, outp = arrays.input_update_counts, arrays.output_update_counts
        if ru is None or inp is None or outp is None:
            return []
        ups[n] = plots.RowUpdateCounts(batches=ru.batches, input_counts=inp, output_counts=outp)
        urows.append(
            [
                n,
                f"{100 * ru.input_rows_per_batch:.1f}%",
                f"{100 * ru.output_rows_per_batch:.1f}%",
                ", ".join(ru.parameters) or "-",
            ]
        )
    table = Table(
        [
            "strategy",
            "rows with input-path gradient per batch",
            "rows with output-path gradient per batch",
            "row parameters",
        ],
        urows,
        f"Over the first {ups[ctx.names[0]].batches} training batches, with the trained weights (seed 0). The "
        "input path is the gradient through sharing.embed, the output path the one through the output layer; a "
        "fixed classifier's rows are buffers and never get one.",
    )
    shared = [g for g in plots.row_update_groups(ups) if len(g) > 1]
    same = (
        " One panel stands for several strategies whose counts are identical: "
        + "; ".join(", ".join(g) for g in shared)
        + "."
        if shared
        else ""
    )
    figure = Figure(
        plots.row_update_frequency(ups, ctx.out_dir / "row_updates.png"),
        "Share of batches in which a vocabulary row gets a non-zero gradient through the input path (blue) and "
        f"the output path (red), against the token's frequency rank.{same}",
        f"{ctx.cmd}  (one run: embtie analyze RUN_DIR)",
    )
    return [Heading("How often each row is updated (Press & Wolf)"), table, figure]
