"""What a ladder costs before it runs (``embtie plan --ladder``): every rung's grid (strategies x seeds, each
arm matched when ``--match`` asks) on the planned hardware, and on a GPU for the rungs that hardware cannot
reach in the time given (``within_h``) or that are only extrapolated to (``--extrapolate``).

Each arm is planned by ``planning.grid.plan_grid`` with the rung's overrides (its config change, its steps and
the arm's matched depth): the same formulas and measured throughputs as ``embtie plan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from embtie.comparison import CompareSpec
from embtie.ladder.budget import RungBudget
from embtie.ladder.driver import LadderPlan
from embtie.planning import estimate
from embtie.planning.grid import GridPlan, plan_grid
from embtie.planning.hardware import Hardware


@dataclass(frozen=True)
class RungCost:
    budget: RungBudget
    extrapolated: bool
    """an --extrapolate rung (never trained by the ladder)."""
    arms: list[GridPlan]
    """one plan per strategy on the planned hardware."""
    gpu_hours: float
    """the rung's grid on the GPU of the plan, training only."""

    @property
    def time(self) -> estimate.GridTime:
        runs = sum(s.runs for a in self.arms for s in a.strategies)
        seconds = sum(s.runs * s.run_s for a in self.arms for s in a.strategies)
        return estimate.GridTime(runs=runs, run_s=seconds / runs, devices=self.arms[0].hardware.devices)

    def reachable(self, within_h: float) -> bool:
        """Trained by the ladder and done within ``within_h`` hours of wall time on the planned hardware."""
        return not self.extrapolated and self.time.wall_s <= within_h * 3600

    def where(self, within_h: float) -> str:
        """Where the rung runs: "here" (reachable), "extrapolated" (an --extrapolate rung) or "beyond" (trained
        by the ladder, but longer than ``within_h`` hours here: costed on the GPU)."""
        if self.reachable(within_h):
            return "here"
        return "extrapolated" if self.extrapolated else "beyond"

    def to_json(self, within_h: float) -> dict[str, Any]:
        """The fields of ``embtie plan --ladder``'s row, unrounded, and each arm's plan (``StrategyPlan``)."""
        t = self.time
        return {
            "rung": self.budget.rung.value,
            "overrides": list(self.budget.rung.overrides),
            "body": self.budget.body,
            "steps": self.budget.steps,
            "tokens_per_run": self.budget.tokens,
            "runs": t.runs,
            "wall_s": t.wall_s,
            "device_hours": t.device_hours,
            "gpu_hours": self.gpu_hours,
            "where": self.where(within_h),
            "strategies": [s.to_json() for a in self.arms for s in a.strategies],
        }


def arms(spec: CompareSpec, overrides: list[str], hardware: Hardware) -> list[GridPlan]:
    """One plan per strategy of ``spec`` (its matched depth added) with ``overrides``."""
    out = []
    for label in spec.strategies:
        arm = spec.matching.overrides_of(label) if spec.matching is not None else []
        out.append(plan_grid(spec.preset, [*overrides, *arm], hardware, [spec.strategy_text(label)], spec.seeds))
    return out


def cost(plan: LadderPlan, hardware: Hardware, gpu: Hardware) -> list[RungCost]:
    """Every trained and extrapolated rung of ``plan`` on ``hardware``, and its GPU-hours on ``gpu``."""
    out = []
    for b, rung in zip(plan.budgets, plan.specs):
        here = arms(rung, rung.overrides, hardware)
        gpu_h = sum(p.time.device_hours for p in arms(rung, rung.overrides, gpu))
        out.append(RungCost(b, False, here, gpu_h))
    for b in plan.beyond:
        overrides = [*plan.base.overrides, *b.overrides()]
        here = arms(plan.base, overrides, hardware)
        gpu_h = sum(p.time.device_hours for p in arms(plan.base, overrides, gpu))
        out.append(RungCost(b, True, here, gpu_h))
    return out
