"""The plan of a preset or a comparison grid on some hardware: one ``StrategyPlan`` per strategy (its runs
differ only in their seed, which changes no cost), and the grid's wall time."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from embtie import comparison, tasks
from embtie.config import RunConfig, load_config
from embtie.planning import estimate, model_shape
from embtie.planning.hardware import Hardware
from embtie.tasks import Task


@dataclass(frozen=True)
class StrategyPlan:
    label: str
    runs: int
    shape: model_shape.ModelShape
    budget: estimate.RunBudget
    flops_per_token: float
    memory: estimate.Memory
    throughput: estimate.Throughput

    @property
    def run_s(self) -> float:
        """Training seconds of one run."""
        return self.budget.tokens / self.throughput.tokens_per_s

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.label,
            "runs": self.runs,
            "params": {**asdict(self.shape), "matmul": self.shape.matmul_params},
            "steps": self.budget.steps,
            "tokens_per_step": self.budget.tokens_per_step,
            "tokens_per_run": self.budget.tokens,
            "context": self.budget.context,
            "flops_per_token": self.flops_per_token,
            "memory_bytes": {**asdict(self.memory), "total": self.memory.total},
            "tokens_per_s": self.throughput.tokens_per_s,
            "tokens_per_s_source": self.throughput.source,
            "run_s": self.run_s,
        }


@dataclass(frozen=True)
class GridPlan:
    preset: str
    overrides: list[str]
    hardware: Hardware
    strategies: list[StrategyPlan]

    @property
    def time(self) -> estimate.GridTime:
        runs = sum(s.runs for s in self.strategies)
        mean_run_s = sum(s.runs * s.run_s for s in self.strategies) / runs
        return estimate.GridTime(runs=runs, run_s=mean_run_s, devices=self.hardware.devices)

    def to_json(self) -> dict[str, Any]:
        t = self.time
        hw = self.hardware
        return {
            "preset": self.preset,
            "overrides": self.overrides,
            "hardware": {
                "name": hw.name,
                "description": hw.description,
                "devices": hw.devices,
                "peak_flops": hw.peak_flops,
                "peak_source": hw.peak_source,
                "mfu": hw.mfu,
                "step_overhead_s": hw.step_overhead_s,
                "memory_bytes": hw.memory_bytes,
            },
            "strategies": [s.to_json() for s in self.strategies],
            "grid": {"runs": t.runs, "mean_run_s": t.run_s, "wall_s": t.wall_s, "device_hours": t.device_hours},
        }


def _configs(
    preset: str, overrides: list[str], strategies: list[str] | None, seeds: int
) -> list[tuple[str, RunConfig, int]]:
    """(label, config, runs) per strategy: a comparison's validated configs, or the preset's own strategy."""
    if strategies is None:
        cfg = load_config(preset, overrides)
        return [(cfg.sharing.name, cfg, seeds)]
    parsed = [comparison.parse_strategy(item) for item in strategies]
    spec = comparison.CompareSpec(
        preset=preset,
        strategies=[label for label, _, _ in parsed],
        seeds=seeds,
        overrides=overrides,
        out_dir=Path("runs") / "plan",
        variants={label: (name, opts) for label, name, opts in parsed if label != name or opts},
    )
    out: dict[str, tuple[str, RunConfig, int]] = {}
    for r in comparison.plan(spec, folders=False):
        label, cfg, n = out.get(r.strategy, (r.strategy, r.cfg, 0))
        out[r.strategy] = (label, cfg, n + 1)
    return list(out.values())


def plan_grid(
    preset: str, overrides: list[str], hardware: Hardware, strategies: list[str] | None = None, seeds: int = 1
) -> GridPlan:
    """The plan of ``seeds`` runs of each strategy (None: the preset's own) of ``preset`` on ``hardware``."""
    loaded: dict[str, Task] = {}
    plans = []
    for label, cfg, runs in _configs(preset, overrides, strategies, seeds):
        key = f"{cfg.task}|{cfg.data}|{cfg.model}"
        if key not in loaded:  # the vocabulary and the training text do not depend on the strategy
            loaded[key] = tasks.get(cfg.task)(cfg)
        task = loaded[key]
        shape = model_shape.measure(cfg, task)
        run = estimate.budget(cfg, task)
        flops = estimate.flops_per_token(shape, run.context)
        rate = estimate.throughput(Path(preset).stem, overrides, cfg, flops, run, hardware)
        plans.append(StrategyPlan(label, runs, shape, run, flops, estimate.memory(shape, cfg, run, hardware), rate))
    return GridPlan(preset, list(overrides), hardware, plans)
