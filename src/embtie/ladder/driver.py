"""A ladder as a list of comparisons: one ``CompareSpec`` per rung (its own folder ``DIR/rungs/<folder>``, so a
rerun resumes rung by rung), each with the rung's config change and token budget (and, with ``--match``, its
arms matched); then the ladder's results collected from the rungs' folders, with the cost of the
extrapolated rungs on a GPU (``planning``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from embtie import comparison
from embtie.comparison import CompareSpec, invariants
from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE
from embtie.ladder import budget, matching, spec, values
from embtie.ladder.budget import RungBudget, TaskCache
from embtie.ladder.results import LadderResults, collect

EXTRAPOLATION_GPU = "h100"
"""the GPU the report costs the extrapolated rungs on (``embtie plan --ladder`` takes any --hardware)."""


@dataclass(frozen=True)
class LadderPlan:
    ladder: spec.Ladder
    base: CompareSpec
    """the comparison every rung repeats (its out_dir is the ladder's folder)."""
    budgets: list[RungBudget]
    beyond: list[RungBudget]
    specs: list[CompareSpec]
    """one comparison per rung of ``budgets``."""
    command: str

    def rung_dir(self, b: RungBudget) -> Path:
        return self.base.out_dir / "rungs" / b.rung.folder


def ladder_command(base: CompareSpec, ladder: spec.Ladder, match: str | None, tolerance: float) -> str:
    """The command that (re)creates the ladder: the comparison's, with the ladder's options before --out."""
    head, _, tail = replace(base, made_by=None, matching=None).command().partition(" --out ")
    extra = list(ladder.options())
    if match is not None:
        extra += ["--match", match]
        if tolerance != DEFAULT_MATCH_TOLERANCE:
            extra += ["--match-tolerance", f"{tolerance:g}"]
    return f"{head} {' '.join(extra)} --out {tail}"


def plan_ladder(
    base: CompareSpec, ladder: spec.Ladder, match: str | None = None, tolerance: float = DEFAULT_MATCH_TOLERANCE
) -> LadderPlan:
    """Every rung's comparison (a ConfigError of one line for a ladder that does not fit the preset), every
    rung's runs validated (``comparison.plan``) before any trains."""
    spec.check_overrides(ladder, base.overrides)
    ladder = values.normalized(ladder, base.preset, base.overrides)
    invariants.check_variants(base.variants, base.strategy_text, spec.set_keys(ladder))
    cache = TaskCache()
    budgets = budget.budgets(base.preset, base.overrides, ladder, ladder.rungs(), cache)
    beyond = budget.budgets(base.preset, base.overrides, ladder, ladder.beyond(), cache)
    command = ladder_command(base, ladder, match, tolerance)
    specs = []
    for b in budgets:
        rung = replace(
            base,
            out_dir=base.out_dir / "rungs" / b.rung.folder,
            overrides=[*base.overrides, *b.overrides()],
            made_by=command,
        )
        specs.append(matching.match(rung, match, tolerance, cache) if match is not None else rung)
    for s in specs:
        comparison.plan(s, folders=False)
    return LadderPlan(ladder, base, budgets, beyond, specs, command)


def gpu_hours(plan: LadderPlan, hardware_name: str = EXTRAPOLATION_GPU) -> dict[str, float]:
    """GPU-hours of each extrapolated rung's grid (every strategy x seed, training only) on one GPU."""
    from embtie.planning import hardware
    from embtie.planning.grid import plan_grid

    hw = hardware.parse(hardware_name)
    strategies = [plan.base.strategy_text(label) for label in plan.base.strategies]
    return {
        b.rung.value: plan_grid(
            plan.base.preset, [*plan.base.overrides, *b.overrides()], hw, strategies, plan.base.seeds
        ).time.device_hours
        for b in plan.beyond
    }


def results(plan: LadderPlan) -> LadderResults:
    """The ladder's results from the rungs finished so far, with the extrapolated rungs' GPU cost."""
    base = plan.base
    out = collect(plan.ladder, base.preset, plan.command, base.strategies, plan.budgets, base.out_dir, base.baseline)
    out.beyond = plan.beyond
    out.matching = {b.rung.value: s.matching for b, s in zip(plan.budgets, plan.specs) if s.matching is not None}
    out.gpu_hours = gpu_hours(plan)
    out.gpu = EXTRAPOLATION_GPU
    return out
