"""The loss at step 0 against Su's (2023) prediction and ln V."""

from __future__ import annotations

import numpy as np

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table, fmt
from embtie.reporting.sections.context import Block, ReportContext, seed_values

FAR = 1.0
"""nats between the measured step-0 loss and Su's prediction beyond which the table marks the row (†)."""


def step0_loss(ctx: ReportContext) -> list[Block]:
    """Measured step-0 loss (seed mean) against the predicted and refined predicted ones."""
    names, ln_v = ctx.names, ctx.ln_v
    measured = seed_values(ctx, lambda x: x.step0_loss)
    pred = {n: ctx.seed0[n].diag.step0.predicted for n in names}
    refined = {n: ctx.seed0[n].diag.step0.predicted_refined for n in names}
    mean = {n: float(np.mean(measured[n])) if measured[n] else None for n in names}
    gap = {n: None if (m := mean[n]) is None else m - pred[n] for n in names}
    far = {n for n in names if (g := gap[n]) is not None and abs(g) > FAR}
    table = Table(
        [
            "strategy",
            "measured step-0 loss (seed mean)",
            "Su's prediction",
            "measured − prediction",
            "refined prediction",
            "ln V",
        ],
        [
            [
                n,
                fmt(mean[n]) + (" †" if n in far else ""),
                fmt(pred[n]),
                fmt(gap[n]),
                fmt(refined[n]),
                fmt(ln_v),
            ]
            for n in names
        ],
        "Measured: training loss of the first batch before any update. Prediction: log(e^(m_ii - m_off) + V - 1) "
        "from the strategy's step-0 logit moments (embtie.analysis.initial_loss), for a model whose residual "
        "branches start at zero; the refined one keeps the spread of the logits. The prediction is for the "
        "bigram model h = RMSNorm(embed(x)) that such a GPT is at step 0 (ptb-gpt-tiny); a model with a final "
        "norm over non-zero branches, an LSTM or an encoder-decoder is not that model, and its measured loss "
        "sits near ln V whatever the prediction says."
        + (
            f" † measured more than {FAR:g} nats from the prediction: the prediction does not describe this "
            "model's step 0 (see above), not a failed measurement."
            if far
            else ""
        ),
    )
    figure = Figure(
        plots.step0_losses(measured, pred, ln_v, ctx.out_dir / "step0_loss.png"),
        "Loss at step 0 per strategy (bars: seed mean, dots: seeds) against Su's prediction (diamonds) and ln V.",
        ctx.cmd,
    )
    return [Heading("Initial loss (Su 2023)"), table, figure]
