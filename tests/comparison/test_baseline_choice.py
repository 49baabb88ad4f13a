"""`embtie compare --baseline LABEL`: every other strategy is tested against that label instead of tied
(modded-nanogpt's head claims ask "zero-initialised head vs default init", both untied): the verdicts, the
paired differences, the report's wording and the reproducing command all follow it."""

from __future__ import annotations

import json

import pytest

from embtie import cli
from embtie.errors import ConfigError
from tiny_runs import TINY_GPT_BODY

TINY = [*TINY_GPT_BODY, "train.max_steps=8", "train.eval_every=4", "train.eval_batches=2", "train.checkpoint_every=0"]


def test_verdicts_and_report_follow_the_named_baseline(tmp_path):
    out = tmp_path / "cmp"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--baseline", "untied",
            "--analysis", "none", "--out", str(out), "--no-progress", *TINY]  # fmt: skip
    assert cli.main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["baseline"] == "untied" and "--baseline untied" in res["command"]
    decisions = res["verdicts"]["valid_ppl"]["decisions"]
    assert set(decisions) == {"tied"}  # the baseline is not tested against itself
    ppl = {(r["strategy"], r["seed"]): r["valid_ppl"] for r in res["rows"]}
    want = sum(100 * (ppl["tied", s] / ppl["untied", s] - 1) for s in (0, 1)) / 2  # percent of untied, per pair
    assert decisions["tied"]["mean"] == pytest.approx(want, rel=1e-9)
    md = (out / "report.md").read_text()
    assert "Baseline `untied`" in md and "Δ vs untied (% of untied)" in md and "Δ vs tied" not in md


def test_a_baseline_outside_the_strategies_is_refused_in_one_line(tmp_path, capsys):
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--baseline", "l2norm", "--out",
            str(tmp_path / "cmp"), *TINY]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["embtie compare: error: --baseline 'l2norm' is not among --strategies (tied,untied); add it "
                   "there or name one of them"]  # fmt: skip
    assert not (tmp_path / "cmp").exists()


def test_a_variant_may_carry_config_overrides_of_its_own_arm():
    """``LABEL=NAME:train.lr=...``: a dotted key is a config override of that arm's runs alone (per-table learning
    rates, a deeper body for a parameter-matched arm), written back in the reproducing command."""
    from embtie import comparison

    parsed = [comparison.parse_strategy(s) for s in ("untied", "untied-lr2=untied:train.lr=0.002:model.n_layers=3",
                                                     "untied-head=untied:train.head_lr=0.002")]  # the preset is tied
    spec = comparison.CompareSpec(strategies=[p[0] for p in parsed], seeds=1, overrides=["train.lr=0.001"],
                                  variants={p[0]: (p[1], p[2]) for p in parsed if p[2]})  # fmt: skip
    runs = {r.strategy: r.cfg for r in comparison.plan(spec, folders=False)}
    assert (runs["untied"].train.lr, runs["untied"].model.n_layers) == (0.001, 2)
    assert (runs["untied-lr2"].train.lr, runs["untied-lr2"].model.n_layers) == (0.002, 3)
    assert runs["untied-lr2"].sharing.name == "untied" and runs["untied-lr2"].sharing.options == {}
    assert runs["untied-head"].train.head_lr == 0.002  # accepted: checked against the arm's own strategy
    assert "untied-lr2=untied:train.lr=0.002:model.n_layers=3" in spec.command()
    bad = comparison.parse_strategy("x=tied:sharing.name=untied")
    with pytest.raises(ConfigError, match=r"sharing\.name and seed come from the comparison itself"):
        comparison.plan(comparison.CompareSpec(strategies=["x"], variants={"x": (bad[1], bad[2])}), folders=False)
