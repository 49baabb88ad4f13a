"""Press & Wolf's update dynamics: is a tied matrix shaped by its output role? Two measurements: the
Procrustes similarity of each strategy's input vectors to an untied run's input and output matrices,
and the output-path share of the embedding rows' gradient over training (``train.path_probe``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from embtie.analysis.update_dynamics import SimilarityRow
from embtie.comparison.records import SeedSummary
from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table, Text
from embtie.reporting.sections.context import Block, ReportContext, ci


def _similarity_table(ctx: ReportContext) -> Table | None:
    rows = ctx.comparison.update_dynamics
    if not rows:
        return None
    columns: list[Callable[[SimilarityRow], float | None]] = [
        lambda r: r.to_input,
        lambda r: r.to_output,
        lambda r: r.to_input_frequent,
        lambda r: r.to_output_frequent,
    ]
    body = []
    for n in ctx.names:
        mine = [r for r in rows if r.strategy == n]
        if not mine:
            continue
        cells = [ci(SeedSummary.of(column(r) for r in mine), 3) for column in columns]
        wins = sum(r.to_output > r.to_input for r in mine)
        body.append([n, *cells, f"{wins} of {len(mine)}"])
    return Table(
        [
            "strategy",
            "≈ untied input (all)",
            "≈ untied output (all)",
            "≈ untied input (frequent)",
            "≈ untied output (frequent)",
            "seeds closer to output",
        ],
        body,
        "Mean row cosine of the strategy's input vectors to the untied run of the same seed, after the "
        "orthogonal rotation that best maps one onto the other (Procrustes); mean ± std [95% CI] over seeds. "
        "Press & Wolf's argument predicts that a tied matrix is closer to the untied output matrix.",
    )


def update_dynamics(ctx: ReportContext) -> list[Block]:
    """The similarity table (when the comparison has untied) and the output-path share plot (when the
    runs were probed)."""
    blocks: list[Block] = []
    table = _similarity_table(ctx)
    if table is not None:
        blocks.append(table)
    shares = {n: ps for n in ctx.names if (ps := ctx.seed0[n].path_shares) is not None and len(ps.records)}
    if shares:
        probed = {n: ps.records for n, ps in shares.items()}
        final = []
        for n, ps in shares.items():
            rec = ps.records
            final.append([n, f"{rec[-1][1]:.1%}", f"{float(np.nanmedian(ps.row_shares)):.1%}", str(len(rec))])
        blocks.append(
            Table(
                [
                    "strategy",
                    "output-path share at the end",
                    "median row: share of its gradient via output, whole run",
                    "probes",
                ],
                final,
                "Gradient norms of the embedding rows split exactly into the path through sharing.embed and the "
                "path through the output layer, on the same training batches at every validation (seed 0).",
            )
        )
        blocks.append(
            Figure(
                plots.output_path_shares(probed, ctx.out_dir / "output_path_shares.png"),
                "Output-path share of the embedding rows' gradient norm at each validation: all rows and the "
                "frequent, middle and rare thirds of the vocabulary (seed 0).",
                ctx.cmd if "train.path_probe=" in ctx.cmd else f"{ctx.cmd} train.path_probe=4",
            )
        )
    if not blocks:
        return []
    return [
        Heading("Update dynamics: input or output role? (Press & Wolf)"),
        Text("Do tied embeddings end up shaped by the output layer's updates?"),
        *blocks,
    ]
