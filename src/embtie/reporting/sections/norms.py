"""Norms of the effective input and output vectors after training (Liu et al., Figure 2)."""

from __future__ import annotations

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table
from embtie.reporting.sections.context import Block, ReportContext


def vector_norms(ctx: ReportContext) -> list[Block]:
    """Mean, spread and range of input- and output-vector norms (seed 0), and their histograms."""
    hists = {n: ctx.seed0[n]["diag"]["norms"] for n in ctx.names}
    table = Table(
        ["strategy", "input norm mean ± std", "output norm mean ± std", "output min - max"],
        [
            [
                n,
                f"{hists[n]['input']['mean']:.3f} ± {hists[n]['input']['std']:.3f}",
                f"{hists[n]['output']['mean']:.3f} ± {hists[n]['output']['std']:.3f}",
                f"{hists[n]['output']['min']:.3f} - {hists[n]['output']['max']:.3f}",
            ]
            for n in ctx.names
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
