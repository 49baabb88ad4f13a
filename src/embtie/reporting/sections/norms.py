"""Norms of the effective input and output vectors after training (Liu et al., Figure 2)."""

from __future__ import annotations

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table
from embtie.reporting.sections.context import Block, ReportContext


def vector_norms(ctx: ReportContext) -> list[Block]:
    """Mean, spread and range of input- and output-vector norms (seed 0), and their histograms."""
    hists = {n: ctx.seed0[n].diag.norms for n in ctx.names}
    table = Table(
        ["strategy", "input norm mean ± std", "output norm mean ± std", "output min - max"],
        [
            [
                n,
                f"{h.input.mean:.3f} ± {h.input.std:.3f}",
                f"{h.output.mean:.3f} ± {h.output.std:.3f}",
                f"{h.output.min:.3f} - {h.output.max:.3f}",
            ]
            for n, h in hists.items()
        ],
        "Effective vectors after training (seed 0): input = what the model is fed (after normalisation and "
        "embed_scale), output = the rows the logits are taken against (all scales folded in).",
    )
    figure = Figure(
        plots.norm_histograms(hists, ctx.out_dir / "norm_histograms.png"),
        "Histograms of input-vector (blue) and output-vector (red) L2 norms after training, seed 0.",
        f"{ctx.cmd}  (one run: embtie analyze RUN_DIR)",
    )
    return [Heading("Norms of input and output vectors (Liu et al., Figure 2)"), table, figure]
