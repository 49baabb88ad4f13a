"""The ladder's results and report, from rung folders whose results.json hold known per-seed perplexities:
the effects are the paired means, the trend is the weighted fit of them, and the report says where each
verdict was decided, where the sign flips, and what the trend predicts (marked) beyond the ladder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from embtie.comparison import CompareSpec
from embtie.ladder import driver, spec
from embtie.ladder.trend import fit
from embtie.reporting import document, ladder_report
from embtie.reporting.document import Text

DIFFS = {"xs": [2.0, 3.0, 4.0], "s": [0.0, 1.0, 2.0], "m": [-3.0, -2.0, -1.0]}
"""untied's per-seed perplexity differences to tied, percent, at each rung."""
VERDICTS = {"xs": "worse", "s": "undecided", "m": "better"}


def _results_json(rung: str) -> dict:
    tied = [400.0, 410.0, 420.0]
    rows = [{"strategy": "tied", "seed": s, "valid_ppl": p} for s, p in enumerate(tied)]
    rows += [
        {"strategy": "untied", "seed": s, "valid_ppl": p * (1 + d / 100)}
        for s, (p, d) in enumerate(zip(tied, DIFFS[rung]))
    ]
    d = np.array(DIFFS[rung])
    decision = {
        "verdict": VERDICTS[rung],
        "n": 3,
        "mean": float(d.mean()),
        "ci": [d.mean() - 2.5, d.mean() + 2.5],
        "level": 0.05,
        "seeds_needed": 9 if VERDICTS[rung] == "undecided" else None,
        "ci_confidence": 0.95,
    }
    verdicts = {
        "metric": "valid_ppl",
        "label": "perplexity",
        "higher_is_better": False,
        "margin": 1.0,
        "relative": True,
        "decisions": {"untied": decision},
    }
    return {"baseline": "tied", "rows": rows, "verdicts": {"valid_ppl": verdicts}}


@pytest.fixture(scope="module")
def ladder_dir(tmp_path_factory) -> tuple[driver.LadderPlan, Path]:
    out = tmp_path_factory.mktemp("ladder")
    base = CompareSpec(preset="ptb-gpt-tiny", strategies=["tied", "untied"], seeds=3, out_dir=out)
    plan = driver.plan_ladder(base, spec.parse("size=xs,s,m", extrapolate="2xl"))
    for b in plan.budgets:
        folder = plan.rung_dir(b)
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps(_results_json(b.rung.value)))
    return plan, out


def test_effects_are_the_paired_means_and_the_trend_their_weighted_fit(ladder_dir):
    plan, _ = ladder_dir
    r = driver.results(plan)
    effects = r.of("untied")
    assert [e.rung for e in effects] == ["xs", "s", "m"]
    for e in effects:
        d = DIFFS[e.rung]
        assert e.mean == pytest.approx(np.mean(d)) and e.se == pytest.approx(np.std(d, ddof=1) / math.sqrt(3))
        assert e.verdict == VERDICTS[e.rung] and e.n == 3
    t = r.trend("untied")
    expected = fit([e.body for e in effects], [e.mean for e in effects], [e.se for e in effects], [3, 3, 3])
    assert t is not None and t.slope == pytest.approx(expected.slope) and t.slope < 0
    assert r.gpu_hours["2xl"] > 0 and [b.rung.value for b in r.beyond] == ["2xl"]


def test_the_report_shows_effects_decisions_flips_and_the_extrapolation(ladder_dir):
    plan, out = ladder_dir
    r = driver.results(plan)
    md, _ = document.write(ladder_report.build(r, out), out)
    text = md.read_text()
    assert "| xs | 12,384 | +3.00% [+0.50, +5.50] worse (n=3) |" in text
    assert "| untied | xs | xs: worse → s: undecided → m: better | s: 9 |" in text
    assert "observed between rungs s→m" in text
    t = r.trend("untied")
    assert t is not None
    mean, lo, hi = t.predict(r.beyond[0].body)
    assert f"{mean:+.2f}% [{lo:+.2f}, {hi:+.2f}] (extrapolation)" in text
    assert (out / "effect_vs_size.png").stat().st_size > 10_000


def test_a_ladder_with_no_finished_rung_says_so(tmp_path):
    base = CompareSpec(preset="ptb-gpt-tiny", strategies=["tied", "untied"], seeds=2, out_dir=tmp_path)
    plan = driver.plan_ladder(base, spec.parse("model.n_layers=1,2"))
    report = ladder_report.build(driver.results(plan), tmp_path)
    assert any(isinstance(b, Text) and "No rung has finished yet" in b.text for b in report.blocks)


def test_the_baseline_is_the_one_the_rungs_tested_against(tmp_path):
    """A rung compared against another baseline (``--baseline untied`` on main) is read against it."""
    base = CompareSpec(preset="ptb-gpt-tiny", strategies=["tied", "untied"], seeds=3, out_dir=tmp_path)
    plan = driver.plan_ladder(base, spec.parse("size=xs,s"))
    for b in plan.budgets:
        data = _results_json(b.rung.value)
        data["baseline"] = "untied"
        data["verdicts"]["valid_ppl"]["decisions"] = {"tied": data["verdicts"]["valid_ppl"]["decisions"]["untied"]}
        plan.rung_dir(b).mkdir(parents=True)
        (plan.rung_dir(b) / "results.json").write_text(json.dumps(data))
    r = driver.results(plan)
    assert r.baseline == "untied" and {e.strategy for e in r.effects} == {"tied"}
    tied_xs = r.of("tied")[0]
    expected = [100 * (1 / (1 + d / 100) - 1) for d in DIFFS["xs"]]  # tied against untied
    assert tied_xs.mean == pytest.approx(np.mean(expected))


def test_the_chosen_baseline_names_the_report_before_any_rung_finished(tmp_path, monkeypatch, capsys):
    """``--baseline l2norm`` (tied not even among the strategies): the report's title, its text and ladder.json
    name l2norm from the first report on, when no rung has a results.json to say which baseline it used."""
    from embtie.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "untied,l2norm", "--baseline", "l2norm", "--seeds", "2",
            "--ladder", "model.n_layers=1,2", "--report-only", "--out", "lad"]  # fmt: skip
    assert main(argv) == 0
    report = (tmp_path / "lad" / "report.md").read_text(encoding="utf-8")
    assert report.splitlines()[0] == "# Ladder model.n_layers=1,2 on ptb-gpt-tiny: untied, l2norm against l2norm"
    assert "No rung has finished yet: run the same command to train them (each strategy against l2norm)." in report
    assert json.loads((tmp_path / "lad" / "ladder.json").read_text(encoding="utf-8"))["baseline"] == "l2norm"
    assert not list((tmp_path / "lad").rglob("results.json"))  # no rung finished: nothing says the baseline
