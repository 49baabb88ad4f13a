"""Learning curves: train and validation loss per strategy over seeds."""

from __future__ import annotations

from embtie.reporting import curve_plot
from embtie.reporting.document import Figure, Heading
from embtie.reporting.sections.context import Block, ReportContext


def learning_curves(ctx: ReportContext) -> list[Block]:
    """Train and valid loss per strategy, seed mean with a min-max band, and the difference to the baseline."""
    curves = {n: [p.curves for p in ctx.comparison.runs_of(n)] for n in ctx.names}
    return [
        Heading("Learning curves"),
        Figure(
            curve_plot.learning_curves(
                curves, ctx.out_dir / "learning_curves.png", ln_v=ctx.ln_v, baseline=ctx.baseline
            ),
            "Train and validation loss per strategy (seed mean; band = min to max over seeds; each strategy its "
            f"own colour, dashes and markers, {ctx.baseline} the solid line under the others). The y axis stops "
            f"at ln V + 1.5; the step-0 section shows the initial losses whole. Below: each strategy's loss "
            f"minus {ctx.baseline}'s, where differences too small for the panels above show.",
            ctx.cmd,
        ),
    ]
