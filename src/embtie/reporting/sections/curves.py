"""Learning curves: train and validation loss per strategy over seeds."""

from __future__ import annotations

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading
from embtie.reporting.sections.context import Block, ReportContext


def learning_curves(ctx: ReportContext) -> list[Block]:
    """Train and valid loss per strategy, seed mean with a min-max band."""
    curves = {n: [p.curves for p in ctx.comparison.runs_of(n)] for n in ctx.names}
    return [
        Heading("Learning curves"),
        Figure(
            plots.learning_curves(curves, ctx.out_dir / "learning_curves.png", ln_v=ctx.ln_v),
            "Train and validation loss per strategy (seed mean; band = min to max over seeds). The y axis stops "
            "at ln V + 1.5; the step-0 section shows the initial losses whole.",
            ctx.cmd,
        ),
    ]
