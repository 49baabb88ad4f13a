"""The report's opening section: the budget and a plain-language summary built from the comparison's
statistics."""

from __future__ import annotations

import comparison_records as cr

from embtie.comparison.records import BaselineTest, TrainingSummary
from embtie.reporting.sections.context import ReportContext
from embtie.reporting.sections.summary import budget_text, plain_summary


def _ctx(tests: dict[str, BaselineTest], seeds: int = 2) -> ReportContext:
    def budget(seed: int) -> TrainingSummary:
        return TrainingSummary(steps=300, tokens_seen=307200, epochs=0.33, train_time_s=50.0 + seed, device="cpu")

    per_run = [cr.run(n, s, summary=budget(s)) for n in ("tied", "untied", "l2norm") for s in range(seeds)]
    summary = {"tied": cr.strategy_summary(valid_ppl=cr.seed_summary(200.0, n=seeds))}
    return cr.context(cr.comparison(per_run, seeds=seeds, tests=tests, summary=summary))


def test_budget_names_steps_tokens_time_and_seeds():
    text = budget_text(_ctx({}))
    assert "300 optimizer steps" in text and "307,200 training tokens" in text and "0.33 epochs" in text
    assert "about 50.5 s" in text and "2 seed(s)" in text  # the median of 50 and 51


def test_summary_orders_real_differences_first_and_says_which_are_noise():
    tests = {"l2norm": cr.baseline_test(-3.0, "within noise", 0.4), "untied": cr.baseline_test(40.0, "worse")}
    lines = plain_summary(_ctx(tests))
    assert lines[0].startswith("Baseline `tied`: perplexity 200")
    assert lines[1].startswith("`untied` is worse than the baseline: +40.0 perplexity (+20.0%)")
    assert lines[2].startswith("`l2norm`: -3.0 perplexity (-1.5%)") and "seed test gives p = 0.40" in lines[2]
    assert lines[-1] == "In short: nothing beat tied; worse: untied; within noise: l2norm."


def test_one_seed_is_said_plainly():
    lines = plain_summary(_ctx({"l2norm": cr.baseline_test(-3.0, "within noise", None)}, seeds=1))
    assert "only one seed" in lines[1]


def test_no_baseline():
    ctx = _ctx({})
    assert "no baseline" in plain_summary(ctx)[0]
