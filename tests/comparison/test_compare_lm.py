"""`embtie compare` end to end on a tiny GPT over a slice of real PTB: runs, skips, statistics, report."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from embtie import cli, comparison
from embtie.comparison.records import Numerics
from embtie.config import presets_dir
from embtie.errors import ConfigError

TINY = [
    "model.dim=16",
    "model.n_layers=1",
    "model.n_heads=2",
    "data.bptt=16",
    "data.batch_size=4",
    "data.eval_batch_size=4",
    "data.train_tokens=4000",
    "data.valid_tokens=1200",
    "train.max_steps=6",
    "train.warmup_steps=0",
    "train.eval_every=3",
    "train.log_every=2",
    "train.checkpoint_every=0",
    "train.threads=1",
]


def test_plan_rejects_bad_grids(tmp_path):
    with pytest.raises(ConfigError, match="unknown strategy"):
        comparison.plan(comparison.CompareSpec("ptb-gpt-tiny", ["tied", "nope"], 1, TINY, tmp_path))
    with pytest.raises(ConfigError, match="--strategies"):
        comparison.plan(comparison.CompareSpec("ptb-gpt-tiny", ["tied"], 1, [*TINY, "sharing.name=l2norm"], tmp_path))
    runs = comparison.plan(comparison.CompareSpec("ptb-gpt-tiny", ["tied", "fixed"], 2, TINY, tmp_path))
    assert [(r.strategy, r.seed) for r in runs] == [("tied", 0), ("tied", 1), ("fixed", 0), ("fixed", 1)]
    assert runs[2].cfg.sharing.options == {"logit_scale": "learned", "bias": True} and runs[1].cfg.seed == 1


def test_plan_gives_every_strategy_the_presets_model_conventions(tmp_path):
    """The Multi30k preset scales embeddings by sqrt(d): dropping that for the other strategies (as an
    earlier plan did) left their token signal under the positional one and cost them 30 BLEU."""
    runs = comparison.plan(
        comparison.CompareSpec("multi30k-transformer-small", ["tied", "untied", "l2norm", "fixed"], 1, [], tmp_path)
    )
    opts = {r.strategy: r.cfg.sharing.options for r in runs}
    assert all(o["embed_scale"] == "sqrt_d" for o in opts.values())
    assert opts["fixed"]["logit_scale"] == "learned"
    lstm = comparison.plan(comparison.CompareSpec("ptb-lstm-small", ["tied", "tied-proj"], 1, [], tmp_path))
    assert all(r.cfg.sharing.options == {"init_range": 0.1, "bias": True} for r in lstm)
    # the preset strategy's own options stay with it; the others get only what they accept
    raw = yaml.safe_load(Path(presets_dir(), "ptb-lstm-small.yaml").read_text())
    raw["sharing"] = {"name": "tied-proj", "options": {"proj_reg": 0.5, "bias": True}}
    preset = tmp_path / "proj.yaml"
    preset.write_text(yaml.safe_dump(raw))
    spec = comparison.CompareSpec(str(preset), ["tied-proj", "tied"], 1, [], tmp_path)
    proj = {r.strategy: r.cfg.sharing.options for r in comparison.plan(spec)}
    assert proj == {"tied-proj": {"proj_reg": 0.5, "bias": True}, "tied": {"bias": True}}


def test_compare_end_to_end(tmp_path, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--out", str(out),
            "--analysis", "full"]  # fmt: skip
    assert cli.main([*argv, "--no-progress", *TINY]) == 0
    printed = capsys.readouterr().out
    assert f"report: {(out / 'report.html').resolve()}" in printed
    rows = list(csv.DictReader((out / "results.csv").read_text().splitlines()))
    assert [(r["strategy"], r["seed"]) for r in rows] == [
        ("tied", "0"),
        ("tied", "1"),
        ("untied", "0"),
        ("untied", "1"),
    ]
    for r in rows:
        s = json.loads((out / "runs" / r["strategy"] / f"seed{r['seed']}" / "summary.json").read_text())
        assert float(r["valid_ppl"]) == pytest.approx(s["valid_ppl"])
        assert s["numerics"]["threads"] == 1 and s["numerics"]["torch"] == torch.__version__  # train.threads=1
    res = json.loads((out / "results.json").read_text())
    # untied learns V*d more parameters than tied
    p = {r["strategy"]: int(r["params_learned"]) for r in rows}
    assert p["untied"] - p["tied"] == 10000 * 16
    # the analysis' per-batch valid losses add up to the ppl the training loop reported
    d = res["diagnostics"][0]
    assert math.exp(d["valid"]["loss"]) == pytest.approx(float(rows[0]["valid_ppl"]), rel=1e-4)
    t = res["bootstrap"]["valid_ppl"]["untied"]
    assert 0 < t["p_value"] <= 1 and {"verdict", "significant", "p_seeds"}.isdisjoint(t)  # one verdict engine
    assert {"tests", "bleu_tests", "vu_tests"}.isdisjoint(res)
    assert t["delta"] == pytest.approx(
        res["summary"]["untied"]["valid_ppl"]["mean"] - res["summary"]["tied"]["valid_ppl"]["mean"]
    )
    md = (out / "report.md").read_text()
    sections = ["Validation perplexity", "Learning curves", "Initial loss", "Learned and fixed parameters"]
    sections += ["Norms of input and output", "token frequency", "Word similarity", "How often each row"]
    assert all(s in md for s in sections)
    made = Numerics.from_json(s["numerics"]).text()
    assert f"Made on: {made} (every run)." in md  # which CPU and kernels made the runs
    assert (out / "report.html").read_text().count("data:image/png;base64,") >= 7
    # a second call trains nothing: every run is finished and analysed
    mtimes = {p: p.stat().st_mtime for p in out.glob("runs/*/*/summary.json")}
    assert cli.main([*argv, "--no-progress", *TINY]) == 0
    assert {p: p.stat().st_mtime for p in out.glob("runs/*/*/summary.json")} == mtimes


def test_finished_runs_made_on_another_device_or_thread_count_are_reused(tmp_path):
    """A comparison continued elsewhere (issue 38: Press & Wolf's CPU runs, then `train.device=cuda`) keeps the
    runs that finished: train.device and train.threads say where a run trained, not what it is. An unfinished
    run started elsewhere gets one line naming where to finish it; any other difference still refuses."""
    spec = comparison.CompareSpec("ptb-gpt-tiny", ["tied"], 1, TINY, tmp_path)
    (planned,) = comparison.plan(spec, folders=False)
    planned.run_dir.mkdir(parents=True)
    elsewhere = planned.cfg.replace({"train.device": "cuda", "train.threads": 4})
    (planned.run_dir / "config.yaml").write_text(elsewhere.to_yaml(), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unfinished run started with train.device=cuda .*finish it there"):
        comparison.plan(spec)
    (planned.run_dir / "summary.json").write_text(json.dumps({"finished": True}), encoding="utf-8")
    (reused,) = comparison.plan(spec)
    assert reused.trained and reused.cfg.train.device == planned.cfg.train.device  # the asked config, for the rest
    other = elsewhere.replace({"train.warmup_steps": 1})
    (planned.run_dir / "config.yaml").write_text(other.to_yaml(), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"train\.warmup_steps is 1 there, 0 here"):
        comparison.plan(spec)
