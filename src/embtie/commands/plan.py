"""``embtie plan``: what a preset or a comparison grid will cost on some hardware, before anything runs."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from embtie.comparison import CompareSpec
    from embtie.ladder.costing import RungCost
    from embtie.planning.grid import GridPlan
    from embtie.planning.hardware import Hardware
    from embtie.planning.model_shape import ModelShape

HELP = "estimate parameters, FLOPs per token, memory, tokens/s and wall time of a preset or grid on some hardware"
DESCRIPTION = (
    "Builds each strategy's model on the meta device (no weights allocated) and reads the training data's size, "
    "then prints the parameters, FLOPs per training token (6N + attention), memory per device, expected tokens/s "
    "(measured where embtie has measured the preset on that hardware, else from the peak FLOP/s and an assumed "
    "utilisation) and the wall time of the grid, with every formula and assumption. Training only: validation "
    "and analysis are not counted."
)
EXAMPLES = (
    "embtie plan ptb-gpt-tiny --hardware cpu:2",
    "embtie plan multi30k-transformer-small --strategies tied,l2norm,cosine --seeds 5 --hardware h100",
    "embtie plan ptb-gpt-tiny --strategies tied,untied,l2norm --seeds 3 --ladder size=xs,s,m,l --extrapolate 4xl,6xl"
    " --hardware cpu:2",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from embtie.commands.common import number_arg
    from embtie.experiment.request import MAX_SEEDS
    from embtie.planning import hardware

    parser.add_argument(
        "args", nargs="*", metavar="PRESET [key=value ...]", help="preset name or YAML file, then config overrides"
    )
    parser.add_argument(
        "--hardware",
        required=True,
        help=f"one of {', '.join(hardware.NAMES)} (cpu:N = N cores, one single-threaded run each)",
    )
    parser.add_argument(
        "--gpus", type=number_arg(int, "--gpus", ge=1, most=100_000), default=None,
        help="GPUs the grid runs on, one run each (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--strategies", default=None, help="a comparison grid: strategies as `embtie compare` takes them (default: "
        "the preset's own strategy)"
    )  # fmt: skip
    parser.add_argument(
        "--seeds", type=number_arg(int, "--seeds", ge=1, most=MAX_SEEDS), default=None,
        help="runs per strategy (default: 1 for a preset, `embtie compare`'s default with --strategies)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    _add_ladder_arguments(parser)


def _add_ladder_arguments(parser: argparse.ArgumentParser) -> None:
    """A ladder's cost: the options of ``embtie compare --ladder``, and where this machine stops."""
    from embtie.commands.common import number_arg
    from embtie.comparison.arms import MATCH_MODES
    from embtie.planning import hardware

    group = parser.add_argument_group("ladders (docs/ladders.md)")
    group.add_argument(
        "--ladder",
        default=None,
        metavar="KEY=V1,V2,...",
        help="cost every rung of this ladder, as `embtie compare --ladder` would train it (needs --strategies)",
    )
    group.add_argument(
        "--tokens-per-param",
        type=number_arg(float, "--tokens-per-param", gt=0, most=1e6),
        default=None,
        metavar="R",
        help="(ladder) tokens per body parameter, as for compare",
    )
    group.add_argument(
        "--extrapolate", default=None, metavar="V1,V2", help="(ladder) rungs only extrapolated to: costed on --gpu"
    )
    group.add_argument("--match", choices=MATCH_MODES, default=None, help="cost the matched arms (as compare --match)")
    group.add_argument(
        "--match-tolerance",
        type=number_arg(float, "--match-tolerance", gt=0, lt=1),
        default=None,
        metavar="FRACTION",
        help="(ladder) as for compare",
    )
    group.add_argument(
        "--within",
        type=number_arg(float, "--within", gt=0, most=1e6),
        default=None,
        metavar="HOURS",
        help=f"(ladder) a rung whose grid takes longer on --hardware is beyond it (default {LADDER_WITHIN_H:g})",
    )
    group.add_argument(
        "--gpu",
        default=None,
        choices=[n for n in hardware.NAMES if n != "cpu:N"],
        help=f"(ladder) the GPU the rungs beyond --hardware are costed on (default {LADDER_GPU})",
    )


LADDER_WITHIN_H = 8.0
"""a rung's grid that takes longer than this on the planned hardware is beyond it: a night's run."""
LADDER_GPU = "h100"


def run(args: argparse.Namespace) -> int:
    from embtie import comparison
    from embtie.commands.common import split_preset
    from embtie.errors import ConfigError
    from embtie.planning import hardware
    from embtie.planning.grid import plan_grid

    hw = hardware.parse(args.hardware, args.gpus)
    preset, overrides = split_preset(args.args)
    if preset is None:
        raise ConfigError("give a preset (or YAML file) to plan, e.g. `embtie plan ptb-gpt-tiny --hardware cpu:2`")
    _check_ladder_options(args)
    if args.ladder is not None:
        return _plan_ladder(args, preset, overrides, hw)
    if args.match is not None:
        return _plan_matched(args, preset, overrides, hw)
    strategies = None if args.strategies is None else comparison.split_strategies(args.strategies)
    seeds = args.seeds if args.seeds is not None else (1 if strategies is None else comparison.DEFAULT_SEEDS)
    plan = plan_grid(preset, overrides, hw, strategies, seeds)
    print(json.dumps(plan.to_json(), indent=2) if args.json else render(plan))
    return 0


def _si(x: float, unit: str = "") -> str:
    for div, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _gib(b: float) -> str:
    return f"{b / 2**30:.2f} GiB" if b >= 2**28 else f"{b / 2**20:.0f} MiB"


def render(plan: GridPlan) -> str:
    """The plan as tables and the assumptions behind them."""
    from embtie.planning import estimate

    hw, t = plan.hardware, plan.time
    head = ["strategy", "runs", "learned", "fixed", "N (6N)", "FLOPs/token", "memory/device", "tokens/s", "run"]
    rows = [
        [
            s.label,
            str(s.runs),
            f"{s.shape.learned:,}",
            f"{s.shape.fixed:,}",
            f"{s.shape.matmul_params:,}",
            _si(s.flops_per_token),
            _gib(s.memory.total),
            f"{s.throughput.tokens_per_s:,.0f}",
            _duration(s.run_s),
        ]
        for s in plan.strategies
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    table = "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in [head, *rows]
    )
    first = plan.strategies[0]
    mem = first.memory
    lines = [
        f"embtie plan: {plan.preset} {' '.join(plan.overrides)}".rstrip() + f" on {hw.label()}",
        "",
        table,
        "",
        f"grid: {t.runs} run{'s' if t.runs != 1 else ''}, wall time {_duration(t.wall_s)} "
        f"({-(-t.runs // t.devices)} round(s) of "
        f"{_duration(t.run_s)} on {t.devices} device{'s' if t.devices != 1 else ''}), "
        f"{t.device_hours:.2f} {'core' if hw.kind == 'cpu' else 'GPU'}-hours",
        "",
        "how (first strategy's figures):",
        f"- run: {first.budget.steps:,} steps x {first.budget.tokens_per_step:,.0f} target tokens = "
        f"{first.budget.tokens:,.0f} tokens; V = {first.shape.vocab_size:,}, d = {first.shape.dim}, "
        f"T = {first.budget.context:.1f} (mean training sequence)",
        _flops_line(first.shape, first.budget.context),
        f"- memory/device = weights {_gib(mem.weights)} + gradients {_gib(mem.gradients)} + optimizer "
        f"{_gib(mem.optimizer)} + activations {_gib(mem.activations)} (fp32 weights and AdamW state; activations "
        f"{estimate.ACTIVATION_VALUES_PER_WEIGHT:.2f} values per token per body weight / d, flash attention, one "
        "chunk of logits)",
        f"- tokens/s: {first.throughput.source}"
        + (f" (peak: {hw.peak_source})" if first.throughput.source.startswith("FLOPs") else ""),
        "- training only: validation, beam search and the analysis after each run are not counted",
    ]
    if hw.memory_bytes is not None and any(s.memory.total > hw.memory_bytes for s in plan.strategies):
        lines.append(f"- does not fit: more than the device's {_gib(hw.memory_bytes)}")
    return "\n".join(lines)


def _check_ladder_options(args: argparse.Namespace) -> None:
    from embtie.errors import ConfigError

    given = {
        "--tokens-per-param": args.tokens_per_param,
        "--extrapolate": args.extrapolate,
        "--within": args.within,
        "--gpu": args.gpu,
    }
    flag = next((f for f, v in given.items() if v is not None), None)
    if args.ladder is None and flag is not None:
        raise ConfigError(f"{flag} is an option of --ladder; add --ladder KEY=V1,V2,... or leave it out")
    if args.match is None and args.match_tolerance is not None:
        raise ConfigError(f"--match-tolerance {args.match_tolerance:g} is an option of --match; add --match params")
    if (args.ladder is not None or args.match is not None) and args.strategies is None:
        what = "--ladder costs a comparison at every rung" if args.ladder is not None else "--match matches arms"
        raise ConfigError(f"{what}: give its --strategies, e.g. tied,untied,l2norm")


def _compare_spec(args: argparse.Namespace, preset: str, overrides: list[str]) -> CompareSpec:
    """The comparison --strategies and --seeds describe (as `embtie compare` reads them)."""
    from pathlib import Path

    from embtie import comparison

    parsed = [comparison.parse_strategy(item) for item in comparison.split_strategies(args.strategies)]
    return comparison.CompareSpec(
        preset=preset,
        strategies=[label for label, _, _ in parsed],
        seeds=args.seeds if args.seeds is not None else comparison.DEFAULT_SEEDS,
        overrides=overrides,
        out_dir=Path("runs") / "plan",
        variants={label: (name, opts) for label, name, opts in parsed if label != name or opts},
    )


def _plan_matched(args: argparse.Namespace, preset: str, overrides: list[str], hw: Hardware) -> int:
    """--match without --ladder: the grid of the matched arms, one row per arm (labelled with its depth)."""
    from dataclasses import replace

    from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE
    from embtie.ladder import costing, matching
    from embtie.planning.grid import GridPlan

    tolerance = args.match_tolerance if args.match_tolerance is not None else DEFAULT_MATCH_TOLERANCE
    spec = matching.match(_compare_spec(args, preset, overrides), args.match, tolerance)
    assert spec.matching is not None
    depth = {a.strategy: f"{a.key}={a.after}" for a in spec.matching.arms}
    rows = [
        replace(s, label=f"{label} ({depth[label]})")
        for label, arm in zip(spec.strategies, costing.arms(spec, overrides, hw))
        for s in arm.strategies
    ]
    plan = GridPlan(preset, list(overrides), hw, rows)
    print(json.dumps(plan.to_json(), indent=2) if args.json else render(plan))
    return 0


def _plan_ladder(args: argparse.Namespace, preset: str, overrides: list[str], hw: Hardware) -> int:
    """Cost every rung of --ladder and print one row per rung."""
    from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE
    from embtie.ladder import costing, driver
    from embtie.ladder import spec as ladder_spec
    from embtie.planning import hardware

    base = _compare_spec(args, preset, overrides)
    ratio = args.tokens_per_param if args.tokens_per_param is not None else ladder_spec.DEFAULT_TOKENS_PER_PARAM
    ladder = ladder_spec.parse(args.ladder, ratio, args.extrapolate)
    tolerance = args.match_tolerance if args.match_tolerance is not None else DEFAULT_MATCH_TOLERANCE
    plan = driver.plan_ladder(base, ladder, args.match, tolerance)
    gpu = hardware.parse(args.gpu or LADDER_GPU)
    within = args.within if args.within is not None else LADDER_WITHIN_H
    costs = costing.cost(plan, hw, gpu)
    if args.json:
        print(json.dumps(ladder_json(costs, hw, gpu, within, plan.command), indent=2))
    else:
        print(render_ladder(costs, hw, gpu, within, plan.command))
    return 0


def _ladder_command(command: str) -> str:
    return command.replace(" --out runs/plan", "")


def ladder_json(costs: list[RungCost], hw: Hardware, gpu: Hardware, within_h: float, command: str) -> dict[str, Any]:
    """``render_ladder``'s table as one object: one entry of ``rungs`` per rung (its row's fields, unrounded,
    and each arm's plan), and the totals of the rungs that run here."""
    here = [c.time for c in costs if c.reachable(within_h)]
    return {
        "command": _ladder_command(command),
        "hardware": hw.name,
        "gpu": gpu.name,
        "within_h": within_h,
        "rungs": [c.to_json(within_h) for c in costs],
        "here": {"wall_s": sum(t.wall_s for t in here), "device_hours": sum(t.device_hours for t in here)},
        "tokens_per_s_source": costs[0].arms[0].strategies[0].throughput.source,
    }


def render_ladder(costs: list[RungCost], hw: Hardware, gpu: Hardware, within_h: float, command: str) -> str:
    """One row per rung: body, steps, tokens, runs, wall time and device-hours here, GPU-hours on ``gpu``."""
    unit = "core" if hw.kind == "cpu" else "GPU"
    head = [
        "rung",
        "body",
        "steps",
        "tokens/run",
        "runs",
        f"wall on {hw.name}",
        f"{unit}-hours",
        f"{gpu.name} GPU-h",
        "where",
    ]
    rows, wall, hours = [], 0.0, 0.0
    for c in costs:
        t, where = c.time, c.where(within_h)
        if where == "here":
            wall, hours = wall + t.wall_s, hours + t.device_hours
        rows.append(
            [
                c.budget.rung.value,
                _si(c.budget.body),
                f"{c.budget.steps:,}",
                _si(c.budget.tokens),
                str(t.runs),
                _duration(t.wall_s),
                f"{t.device_hours:.2f}",
                f"{c.gpu_hours:.3g}",
                f"beyond {within_h:g} h here: GPU" if where == "beyond" else where,
            ]
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    table = "\n".join(
        "  ".join(c.ljust(w) if i in (0, 8) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in [head, *rows]
    )
    return "\n".join(
        [
            f"embtie plan (ladder) on {hw.label()}: {_ladder_command(command)}",
            "",
            table,
            "",
            f"rungs here: wall time {_duration(wall)}, {hours:.2f} {unit}-hours (training only: validation and the "
            "analysis after each run are not counted); the others on one " + gpu.description,
            "tokens/s per rung: " + costs[0].arms[0].strategies[0].throughput.source,
        ]
    )


def _flops_line(shape: ModelShape, context: float) -> str:
    """The FLOPs formula with the first strategy's numbers; with sliding windows, the attention term sums
    min(T, W) over the layers (``ModelShape.attended``)."""
    tail = f"; N = learned + fixed weights less lookup-only tables ({shape.lookup:,}); d_attn = heads x head dim"
    windows = [w for w in shape.attention_windows if w is not None]
    if not windows:
        return (f"- FLOPs/token = 6 N + 12 L_attn d_attn T = 6 x {shape.matmul_params:,} + 12 x "
                f"{shape.attention_layers} x {shape.attention_dim} x {context:.1f}" + tail)  # fmt: skip
    sizes = ", ".join(f"{w:,}" for w in sorted(set(windows)))
    return (f"- FLOPs/token = 6 N + 12 d_attn sum over layers of min(T, W) = 6 x {shape.matmul_params:,} + 12 x "
            f"{shape.attention_dim} x {shape.attended(context):,.1f} ({len(windows)} of {shape.attention_layers} "
            f"layers attend through a sliding window W = {sizes}; T = {context:.1f})" + tail)  # fmt: skip
