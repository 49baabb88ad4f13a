"""``embtie plan --ladder``: every rung costed as the ladder trains it, GPU-hours by the planning formulas
for the rungs beyond the machine, and the rungs marked here / beyond / extrapolated."""

from __future__ import annotations

import pytest

from embtie.cli import main
from embtie.comparison import CompareSpec
from embtie.ladder import costing, driver, spec
from embtie.planning import hardware

V, T = 10_000, 64  # PTB's vocabulary, the preset's sequence length


def test_gpu_hours_follow_the_planning_formulas():
    """tied and untied both multiply N = body + V d per token (untied's input table is a lookup): FLOPs/token
    6 N + 12 L d T; an H100 step takes FLOPs x tokens / (peak x MFU) + the per-step overhead."""
    base = CompareSpec(preset="ptb-gpt-tiny", strategies=["tied", "untied"], seeds=3)
    plan = driver.plan_ladder(base, spec.parse("size=xs,s", extrapolate="4xl"))
    h100 = hardware.parse("h100")
    costs = costing.cost(plan, hardware.parse("cpu:2"), h100)
    assert [(c.budget.rung.value, c.extrapolated) for c in costs] == [("xs", False), ("s", False), ("4xl", True)]
    for c, (d, layers) in zip(costs, [(32, 1), (48, 1), (256, 6)]):
        flops = 6 * (c.budget.body + V * d) + 12 * layers * d * T
        step_s = flops * c.budget.tokens_per_step / (h100.peak_flops["fp32"] * h100.mfu) + h100.step_overhead_s
        assert c.gpu_hours == pytest.approx(2 * 3 * c.budget.steps * step_s / 3600, rel=1e-9)
        assert c.time.runs == 6


def test_the_plan_marks_where_each_rung_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["plan", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--ladder", "size=xs,l",
            "--extrapolate", "6xl", "--hardware", "cpu:2", "--within", "0.05"]  # fmt: skip
    assert main(argv) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line[:3] in ("xs ", "l  ", "6xl")}
    assert rows["xs"].rstrip().endswith("here")
    assert rows["l"].rstrip().endswith("beyond 0.05 h here: GPU")
    assert rows["6xl"].rstrip().endswith("extrapolated")


def test_ladder_options_need_a_ladder_and_strategies(capsys):
    assert main(["plan", "ptb-gpt-tiny", "--hardware", "cpu:2", "--within", "3"]) == 2
    assert main(["plan", "ptb-gpt-tiny", "--hardware", "cpu:2", "--ladder", "size=xs,s"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--within is an option of --ladder" in err[0] and "--strategies" in err[1]


def test_the_cpu_estimate_meets_the_measured_preset():
    """With the CPU's per-step overhead (bench/ladder_steps.py) and MFU 0.40, the FLOP estimate of ptb-gpt-tiny
    (an override that changes nothing of its shape turns the measurement off) is its measured 5,226 tokens/s
    within 3%: the overhead shifts the small rungs' estimates without moving the preset's."""
    from embtie.config import load_config
    from embtie.ladder.budget import TaskCache
    from embtie.planning import estimate, measured, model_shape

    cfg = load_config("ptb-gpt-tiny")
    task = TaskCache().get(cfg)
    run = estimate.budget(cfg, task)
    flops = estimate.flops_per_token(model_shape.measure(cfg, task), run.context)
    rate = estimate.throughput("ptb-gpt-tiny", ["model.dim=128"], cfg, flops, run, hardware.parse("cpu:1"))
    known = measured.lookup("ptb-gpt-tiny", "cpu", "fp32", [])
    assert rate.tokens_per_s == pytest.approx(known.tokens_per_s, rel=0.03)
    assert rate.source.startswith("FLOPs") and "30 ms per step" in rate.source


def test_plan_costs_a_matched_comparison_arm_by_arm(capsys):
    import json

    argv = ["plan", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--match", "params",
            "--hardware", "cpu:2", "--json"]  # fmt: skip
    assert main(argv) == 0
    rows = {s["strategy"]: s for s in json.loads(capsys.readouterr().out)["strategies"]}
    assert set(rows) == {"tied (model.n_layers=9)", "untied (model.n_layers=2)"}
    tied, untied = rows["tied (model.n_layers=9)"], rows["untied (model.n_layers=2)"]
    assert abs(tied["params"]["learned"] / untied["params"]["learned"] - 1) <= 0.05
    assert tied["flops_per_token"] > untied["flops_per_token"]  # seven more blocks to multiply
    assert main(["plan", "ptb-gpt-tiny", "--hardware", "cpu:2", "--match", "params"]) == 2
    assert "--match matches arms: give its --strategies" in capsys.readouterr().err


def test_the_ladder_plan_as_json_carries_the_text_tables_fields(tmp_path, monkeypatch, capsys):
    """--json prints one object per rung with the fields of the text table, unrounded: formatted as the table
    formats them they give the table's cells, row for row; the totals are the sums over the rungs run here."""
    import json

    from embtie.commands.plan import _duration, _si

    monkeypatch.chdir(tmp_path)
    argv = ["plan", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--ladder", "size=xs,l",
            "--extrapolate", "6xl", "--hardware", "cpu:2", "--within", "0.05"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out.splitlines()
    assert main([*argv, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    rows = text[3:6]  # the table's rows, after its title, a blank line and its header
    assert [r["rung"] for r in plan["rungs"]] == ["xs", "l", "6xl"]
    for line, r in zip(rows, plan["rungs"]):
        where = "beyond 0.05 h here: GPU" if r["where"] == "beyond" else r["where"]
        cells = [r["rung"], _si(r["body"]), f"{r['steps']:,}", _si(r["tokens_per_run"]), str(r["runs"]),
                 _duration(r["wall_s"]), f"{r['device_hours']:.2f}", f"{r['gpu_hours']:.3g}", where]  # fmt: skip
        assert "".join(cells).replace(" ", "") == line.replace(" ", "")
        assert r["runs"] == sum(s["runs"] for s in r["strategies"]) == 4
        assert {s["strategy"] for s in r["strategies"]} == {"tied", "untied"}
    assert [r["where"] for r in plan["rungs"]] == ["here", "beyond", "extrapolated"]
    here = plan["rungs"][0]
    assert plan["here"] == {"wall_s": here["wall_s"], "device_hours": here["device_hours"]}
    assert plan["command"] in text[0] and plan["hardware"] == "cpu" and plan["gpu"] == "h100"
