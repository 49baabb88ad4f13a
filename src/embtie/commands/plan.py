"""``embtie plan``: what a preset or a comparison grid will cost on some hardware, before anything runs."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from embtie.planning.grid import GridPlan

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
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from embtie.commands.common import MAX_SEEDS, number_arg
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
        [s.label, str(s.runs), f"{s.shape.learned:,}", f"{s.shape.fixed:,}", f"{s.shape.matmul_params:,}",
         _si(s.flops_per_token), _gib(s.memory.total), f"{s.throughput.tokens_per_s:,.0f}", _duration(s.run_s)]
        for s in plan.strategies
    ]  # fmt: skip
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    table = "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                      for r in [head, *rows])  # fmt: skip
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
        f"- FLOPs/token = 6 N + 12 L_attn d T = 6 x {first.shape.matmul_params:,} + 12 x "
        f"{first.shape.attention_layers} x {first.shape.dim} x {first.budget.context:.1f}; N = learned + fixed "
        f"weights less lookup-only tables ({first.shape.lookup:,})",
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
