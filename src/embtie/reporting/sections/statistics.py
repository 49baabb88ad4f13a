"""The report's opening text, validation perplexity with significance against the baseline, and throughput."""

from __future__ import annotations

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table, Text
from embtie.reporting.sections.context import Block, ReportContext, ci, delta_cells, seed_values


def overview(ctx: ReportContext) -> list[Block]:
    """What was compared, how to reproduce it, and whether the grid is finished."""
    res = ctx.comparison
    blocks: list[Block] = []
    if res.runs_finished < res.runs_planned:
        blocks.append(
            Text(
                f"Partial report: {res.runs_finished} of {res.runs_planned} runs are finished; "
                "statistics use the seeds finished so far."
            )
        )
    finished = {n: sum(1 for r in res.rows if r.strategy == n) for n in ctx.names}
    seeds = str(res.seeds)
    if any(k != res.seeds for k in finished.values()):  # a partial grid, or rounds added by --until-decided
        seeds += " (finished: " + ", ".join(f"{n} {k}" for n, k in finished.items()) + ")"
    blocks += [
        Text(
            f"Strategies: {', '.join(ctx.names)}; seeds: {seeds}; vocabulary V = {ctx.v:,}, width d = {ctx.d}. "
            f"Reproduce everything (finished runs are skipped, plots are redrawn from saved files): `{ctx.cmd}`"
        ),
        Text(
            "Config overrides on top of the preset, for every run: "
            + (", ".join(f"`{o}`" for o in res.overrides) or "none")
            + ". Validation perplexities are on the validation tokens the runs evaluate "
            "(all of them unless `data.valid_tokens` limits them)."
        ),
    ]
    return blocks


def _perplexity_row(ctx: ReportContext, n: str) -> list[str]:
    s = ctx.comparison.summary[n]
    if ctx.comparison.bootstrap_of("valid_ppl", n) is None and n != ctx.baseline:
        cells = ["-", "-", f"no {ctx.baseline} baseline in this comparison"]
    else:
        cells = delta_cells(ctx, "valid_ppl", n)
    return [n, ci(s.valid_ppl), *cells, ci(s.best_valid_ppl), ci(s.step0_loss, 2)]


def validation_perplexity(ctx: ReportContext) -> list[Block]:
    """Perplexity per strategy over seeds, Δ to the baseline with the bootstrap and seed tests."""
    table = Table(
        [
            "strategy",
            "valid ppl: mean ± std [95% CI]",
            f"Δ ppl vs {ctx.baseline} [95% CI]",
            "p: bootstrap / paired seeds",
            "verdict",
            "best valid ppl",
            "step-0 loss",
        ],
        [_perplexity_row(ctx, n) for n in ctx.names],
        "Mean, standard deviation and Student-t 95% interval over seeds. Δ and p: paired bootstrap "
        "(1000 resamples, sacrebleu's test statistic) over the validation batches, seed means compared "
        "(over the seeds both strategies have finished); it sees the noise of the evaluation sample only. "
        "p (paired seeds): the paired t-test over seeds (Holm-corrected over the strategies), the noise of "
        "training; the verdict comes from the paired seeds (section Verdicts).",
    )
    vals = seed_values(ctx, lambda x: x.valid_ppl)
    figure = Figure(
        plots.metric_by_strategy(
            vals, ctx.out_dir / "valid_ppl.png", "validation perplexity", baseline=ctx.baseline, log=True
        ),
        "Final validation perplexity per strategy (log axis): geometric mean over seeds with its 95% interval, "
        f"seeds as dots, {ctx.baseline}'s geometric mean dotted.",
        ctx.cmd,
    )
    return [Heading(f"Validation perplexity and significance against {ctx.baseline}"), table, figure]


def throughput(ctx: ReportContext) -> list[Block]:
    """Training tokens per second over seeds."""
    return [
        Heading("Throughput"),
        Table(
            ["strategy", "training tokens/s (mean ± std [95% CI])"],
            [[n, ci(ctx.comparison.summary[n].tokens_per_s, 0)] for n in ctx.names],
            "Measured while the runs trained; on a shared machine these numbers are noisy (use bench/ for ratios).",
        ),
    ]
