"""The report's opening section: the budget and a plain-language summary in the four verdicts (better,
worse, equivalent within the margin, undecided with the seeds that would decide it), built from the
per-seed values paired by seed."""

from __future__ import annotations

import comparison_records as cr
from embtie.comparison.records import TrainingSummary
from embtie.metrics import metric
from embtie.reporting.sections.context import ReportContext
from embtie.reporting.sections.summary import budget_text, plain_summary

TIED = [200.0, 204.0, 198.0, 202.0, 196.0]


def _ctx(ppl: dict[str, list[float]], seeds: int = 5) -> ReportContext:
    def budget(seed: int) -> TrainingSummary:
        return TrainingSummary(steps=300, tokens_seen=307200, epochs=0.33, train_time_s=50.0 + seed, device="cpu")

    names = ["tied", *ppl]
    per_run = [cr.run(n, s, summary=budget(s)) for n in names for s in range(seeds)]
    values = {"tied": TIED[:seeds], **ppl}
    rows = [cr.result_row(n, s, valid_ppl=values[n][s]) for n in names for s in range(seeds)]
    summary = {"tied": cr.strategy_summary(valid_ppl=cr.seed_summary(200.0, n=seeds))}
    return cr.context(cr.comparison(per_run, seeds=seeds, rows=rows, summary=summary))


def test_budget_names_steps_tokens_time_and_seeds():
    text = budget_text(_ctx({"l2norm": [t * 0.98 for t in TIED]}, seeds=2))
    assert "300 optimizer steps" in text and "307,200 training tokens" in text and "0.33 epochs" in text
    assert "about 50.5 s" in text and "2 seed(s)" in text  # the median of 50 and 51


def test_summary_says_each_verdict_decided_ones_first():
    ppl = {
        "noisy": [t * (1 + e) for t, e in zip(TIED, (0.06, -0.01, 0.05, 0.0, 0.05))],
        "untied": [t * 1.20 + e for t, e in zip(TIED, (0.5, -0.4, 0.2, 0.1, -0.3))],  # +20%, paired: worse
        "same": [t * (1 + e) for t, e in zip(TIED, (0.0005, -0.0004, 0.0002, -0.0003, 0.0001))],
    }
    lines = plain_summary(_ctx(ppl))
    assert lines[0].startswith("Baseline `tied`: perplexity 200")
    # each interval at its step's level in the one family of 6 tests: the first 3 steps run at 0.05/3
    assert lines[1].startswith("`untied` is worse than the baseline: +20.0% perplexity, 98.33% CI [")
    assert "over 5 paired seeds (paired t-test, one step-down over all tests, p" in lines[1]
    assert lines[2].startswith("`same` is equivalent to the baseline within ±1%: +0.0% perplexity, 96.67% CI [")
    assert lines[3].startswith("`noisy`: ") and "undecided" in lines[3] and "paired seeds would decide it" in lines[3]
    assert lines[-1] == "In short (perplexity, margin ±1%): worse: untied; equivalent: same; undecided: noisy."


def test_one_seed_decides_nothing():
    lines = plain_summary(_ctx({"l2norm": [198.0]}, seeds=1))
    assert "No strategy has two seeds paired with the baseline's yet" in lines[1]


def test_no_baseline():
    ctx = _ctx({"l2norm": [t * 0.98 for t in TIED]})
    ctx.rows[:] = [r for r in ctx.rows if r.strategy != "tied"]
    assert "no baseline" in plain_summary(ctx)[0]


def _overview_text(ctx: ReportContext) -> str:
    from embtie.reporting.sections.statistics import overview

    return " ".join(b.text for b in overview(ctx) if hasattr(b, "text"))


def test_overview_names_the_seeds_each_strategy_finished_when_rounds_added_some():
    ctx = _ctx({"l2norm": [t * 0.98 for t in TIED]}, seeds=5)
    assert "seeds: 5;" in _overview_text(ctx)  # a complete grid: the seeds asked for
    ctx.comparison.seeds = 4  # --until-decided --seeds 4 added a round of seed 4 for both
    assert "seeds: 4 (finished: tied 5, l2norm 5);" in _overview_text(ctx)


def test_budget_of_runs_that_stopped_early_gives_the_range_and_says_so():
    ctx = _ctx({"fixed": [t * 1.1 for t in TIED]}, seeds=3)
    for i, run in enumerate(ctx.comparison.per_run):
        run.summary.steps, run.summary.epochs = 2000 + 500 * i, 9.0 + i
        run.summary.monitor, run.summary.stopped_early = "bleu", True
    text = budget_text(ctx)
    assert "2,000-4,500 (median 3,250) optimizer steps" in text and "9-14 (median 12) epochs" in text
    assert "Every run stopped early, when its validation bleu had stopped improving." in text
    assert "every run trained" not in text and "not converged ones" not in text
    ctx.comparison.per_run[0].summary.stopped_early = False
    assert "5 of 6 runs stopped early" in budget_text(ctx)


def test_summary_says_which_cpus_and_kernels_made_the_runs():
    from embtie.comparison.records import Numerics
    from embtie.reporting.sections.summary import numerics_text

    ctx = _ctx({"l2norm": [t * 0.98 for t in TIED]}, seeds=2)
    assert numerics_text(ctx).startswith("Made on: not recorded")
    made = Numerics(cpu="AMD EPYC", cpu_capability="AVX512", kernel_env={}, threads=1, torch="2.13.0")
    for p in ctx.comparison.per_run:
        p.summary.numerics = made
    assert numerics_text(ctx).startswith("Made on: AMD EPYC, AVX512 kernels, 1 thread, torch 2.13.0 (every run).")
    ctx.comparison.per_run[0].summary.numerics = Numerics(cpu="AMD EPYC", cpu_capability="AVX2",
                                                          kernel_env={"ATEN_CPU_CAPABILITY": "avx2"}, threads=1,
                                                          torch="2.13.0")  # fmt: skip
    text = numerics_text(ctx)
    first = "AMD EPYC, AVX512 kernels, 1 thread, torch 2.13.0 (3 runs); "
    assert text.startswith("Made on 2 different CPUs or kernel paths: " + first)
    assert "ATEN_CPU_CAPABILITY=avx2, 1 thread, torch 2.13.0 (1 run)." in text


def test_pairing_table_explains_a_negative_variance_removed():
    from embtie.reporting.sections.verdicts import NEGATIVE_NOTE, pairing_table

    # anti-correlated with tied: the paired differences spread more than independent seeds would
    anti = [t * 1.05 - 2 * (t - 200.0) for t in TIED]
    table = pairing_table(_ctx({"anti": anti}), metric("valid_ppl"))
    assert table is not None and table.rows[0][-1].endswith("% †") and table.rows[0][-1].startswith("-")
    assert float(table.rows[0][2]) < 0 and table.caption.endswith(NEGATIVE_NOTE)
    same_way = pairing_table(_ctx({"with": [t * 1.05 for t in TIED]}), metric("valid_ppl"))
    assert same_way is not None and "†" not in same_way.caption
