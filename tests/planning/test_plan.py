"""``embtie plan``: parameter counts equal the real models', FLOPs per token follow the stated formula,
times scale with runs and devices, the FLOP estimate lands within 30% of the CPU runs measured in results/,
and unknown hardware is one line with a did-you-mean."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from embtie import cli, tasks
from embtie.analysis.param_counts import count_parameters
from embtie.config import load_config
from embtie.errors import ConfigError
from embtie.planning import estimate, hardware, measured, model_shape
from embtie.planning.grid import plan_grid
from embtie.sharing.base import strategy_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("preset", "strategy"),
    [("ptb-gpt-tiny", "tied"), ("ptb-gpt-tiny", "untied"), ("multi30k-transformer-small", "fixed"),
     ("ptb-lstm-small", "hadamard")],
)  # fmt: skip
def test_parameter_counts_equal_the_real_models(preset, strategy):
    cfg = load_config(preset, [f"sharing.name={strategy}"])
    task = tasks.get(cfg.task)(cfg)
    shape = model_shape.measure(cfg, task)
    real = task.build_model()
    counts = count_parameters(real, strategy_of(real))
    assert (shape.learned, shape.fixed) == (counts.learned, counts.fixed)
    assert shape.vocab_size == task.output_vocab_size()


def test_flops_per_token_follow_6n_plus_the_attention_term():
    # ptb-gpt-tiny, tied: V = 10000, d = 128, two blocks; the tied matrix is the output layer (no lookup-only
    # table), so N = every learned weight; T = bptt = 64.
    cfg = load_config("ptb-gpt-tiny")
    task = tasks.get(cfg.task)(cfg)
    shape = model_shape.measure(cfg, task)
    run = estimate.budget(cfg, task)
    assert (shape.vocab_size, shape.dim, shape.attention_layers, shape.lookup) == (10000, 128, 2, 0)
    assert run.context == 64
    assert estimate.flops_per_token(shape, run.context) == 6 * 1_673_856 + 12 * 2 * 128 * 64
    # untied: the input table is only looked up, so the 6N term is tied's
    cfg_u = load_config("ptb-gpt-tiny", ["sharing.name=untied"])
    shape_u = model_shape.measure(cfg_u, task)
    assert shape_u.lookup == 10000 * 128 and shape_u.matmul_params == shape.matmul_params


def test_budget_is_steps_times_tokens_per_step():
    cfg = load_config("ptb-gpt-tiny", ["train.max_steps=300"])
    run = estimate.budget(cfg, tasks.get(cfg.task)(cfg))
    assert run.steps == 300 and run.tokens_per_step == cfg.data.batch_size * cfg.data.bptt
    assert run.tokens == 300 * run.tokens_per_step


def test_times_scale_with_seeds_devices_and_steps():
    def wall(seeds, hw, steps=400):
        return plan_grid("ptb-gpt-tiny", [f"train.max_steps={steps}", "model.dim=96"], hw, ["tied", "untied"], seeds)

    one = wall(2, hardware.parse("cpu:1"))
    assert one.strategies[0].throughput.source.startswith("FLOPs")  # model.dim changes the shape
    assert wall(4, hardware.parse("cpu:1")).time.wall_s == pytest.approx(2 * one.time.wall_s)
    assert wall(4, hardware.parse("cpu:4")).time.wall_s == pytest.approx(one.time.wall_s / 2)
    assert wall(2, hardware.parse("cpu:1"), steps=800).time.wall_s == pytest.approx(2 * one.time.wall_s)
    assert wall(4, hardware.parse("cpu:4")).time.device_hours == pytest.approx(2 * one.time.device_hours)
    # a faster device: more tokens/s, and a bf16 peak above fp32's
    h100 = wall(2, hardware.parse("h100", gpus=2))
    assert h100.time.wall_s < one.time.wall_s
    bf16 = plan_grid("ptb-gpt-tiny", ["model.dim=96", "train.precision=bf16"], hardware.parse("h100"))
    fp32 = plan_grid("ptb-gpt-tiny", ["model.dim=96"], hardware.parse("h100"))
    assert bf16.strategies[0].throughput.tokens_per_s > fp32.strategies[0].throughput.tokens_per_s
    assert bf16.strategies[0].memory.activations < fp32.strategies[0].memory.activations


def _measured_median(source: str) -> float:
    rows = json.loads((ROOT / source).read_text())["rows"]
    return statistics.median(r["tokens_per_s"] for r in rows if r.get("tokens_per_s"))


@pytest.mark.parametrize("entry", [m for m in measured.MEASURED if m.hardware == "cpu"], ids=lambda m: m.preset)
def test_measured_cpu_throughputs_are_the_results_medians(entry):
    assert entry.tokens_per_s == pytest.approx(_measured_median(entry.source), abs=1)


@pytest.mark.parametrize(
    "preset", ["ptb-gpt-tiny", "multi30k-transformer-small", "multi30k-dynamicconv-small", "multi30k-rnn-shalev"]
)
def test_flop_estimate_is_within_30_percent_of_the_measured_cpu_runs(preset):
    entry = next(m for m in measured.MEASURED if (m.preset, m.hardware) == (preset, "cpu"))
    cfg = load_config(preset)
    task = tasks.get(cfg.task)(cfg)
    run = estimate.budget(cfg, task)
    flops = estimate.flops_per_token(model_shape.measure(cfg, task), run.context)
    # an override that changes nothing but is a shape key takes the FLOP path instead of the measurement
    rate = estimate.throughput(preset, ["model.dim=" + str(cfg.model.dim)], cfg, flops, run, hardware.parse("cpu:1"))
    assert rate.source.startswith("FLOPs")
    assert abs(rate.tokens_per_s / entry.tokens_per_s - 1) <= 0.30


def test_a_measured_preset_uses_its_measurement():
    plan = plan_grid("multi30k-transformer-small", [], hardware.parse("h100"), ["tied", "l2norm"], 5)
    assert all(s.throughput.source == "measured: results/multi30k-h100/results.csv" for s in plan.strategies)
    assert plan.time.runs == 10 and plan.time.wall_s == pytest.approx(10 * plan.strategies[0].run_s)


@pytest.mark.parametrize(
    ("text", "message"),
    [("h10", "did you mean 'h100'?"), ("cpu:0", "at least one core"), ("tpu", "choose from h100, h200, a100, cpu:N")],
)
def test_unknown_hardware_is_one_line_error(text, message):
    with pytest.raises(ConfigError, match=message.replace("?", r"\?")):
        hardware.parse(text)


def test_plan_command_prints_tables_and_json(capsys):
    assert cli.main(["plan", "ptb-gpt-tiny", "train.max_steps=100", "--hardware", "cpu:2"]) == 0
    out = capsys.readouterr().out
    assert "FLOPs/token = 6 N + 12 L_attn d_attn T" in out and "measured: results/su-convergence" in out
    assert cli.main(["plan", "ptb-gpt-tiny", "--hardware", "a100", "--gpus", "2", "--strategies", "tied,untied",
                     "--seeds", "3", "--json"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert [s["strategy"] for s in data["strategies"]] == ["tied", "untied"]
    assert data["grid"]["runs"] == 6 and data["hardware"]["devices"] == 2
    assert data["strategies"][1]["params"]["learned"] > data["strategies"][0]["params"]["learned"]
    assert cli.main(["plan", "ptb-gpt-tiny", "--hardware", "h1000"]) == 2
    assert "did you mean 'h100'?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ptb-gpt-tiny", "--hardware", "cpu:2", "--gpus", "2"], "--gpus is for a GPU; give CPU cores as cpu:N"),
        (["--hardware", "h100"], "give a preset"),
        (["ptb-gpt-tiny", "--hardware", "h100", "--gpus", "0"], "--gpus 0 must be >= 1"),
        (["ptb-gpt-tiny", "--hardware", "h100", "--strategies", "tide"], "tide"),
    ],
)
def test_plan_refuses_bad_arguments_in_one_line(argv, message, capsys):
    assert cli.main(["plan", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
