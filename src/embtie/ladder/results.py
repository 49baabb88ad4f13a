"""A ladder's results: each rung's paired effects against the baseline, read back from the rung's own
comparison (``rungs/<folder>/results.json``, written by ``embtie compare``), and the trend along the rungs.

The effect of a strategy at a rung is the mean over paired seeds of its difference to the baseline on the
deciding metric (percent of the baseline for perplexity), with the standard error of that mean; the
verdict and its interval are the rung's own (``comparison.verdicts``: its Holm step, its design).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from embtie.comparison.arms import Matching
from embtie.decisions import Margin, paired_difference
from embtie.ladder.budget import RungBudget
from embtie.ladder.spec import Ladder
from embtie.ladder.trend import Trend, fit
from embtie.metrics import primary_among


@dataclass(frozen=True)
class RungEffect:
    rung: str
    body: int
    strategy: str
    n: int
    """paired seeds."""
    mean: float
    se: float
    """standard error of the mean difference (nan below 2 seeds)."""
    ci: tuple[float, float]
    """the interval the rung's verdict rests on, at ``ci_confidence``."""
    ci_confidence: float
    verdict: str
    seeds_needed: int | None
    """for an undecided verdict, the paired seeds that would decide it with 80% probability."""


@dataclass(frozen=True)
class MetricInfo:
    key: str
    label: str
    relative: bool
    margin: float
    higher_is_better: bool

    @property
    def unit(self) -> str:
        return "%" if self.relative else ""


@dataclass
class LadderResults:
    ladder: Ladder
    preset: str
    command: str
    baseline: str
    strategies: list[str]
    metric: MetricInfo | None
    """None until a rung has finished."""
    rungs: list[RungBudget]
    beyond: list[RungBudget]
    effects: list[RungEffect]
    matching: dict[str, Matching] = field(default_factory=dict)
    """rung value -> how its arms were matched (``--match``)."""
    gpu_hours: dict[str, float] = field(default_factory=dict)
    """extrapolated rung value -> GPU-hours of its grid on ``gpu``."""
    gpu: str = ""

    def of(self, strategy: str) -> list[RungEffect]:
        return [e for e in self.effects if e.strategy == strategy]

    def trend(self, strategy: str) -> Trend | None:
        """The weighted trend of ``strategy``'s effect (None with fewer than two rungs of 2+ seeds)."""
        usable = [e for e in self.of(strategy) if e.n >= 2 and e.se > 0]
        if len({e.body for e in usable}) < 2:
            return None
        return fit([e.body for e in usable], [e.mean for e in usable], [e.se for e in usable], [e.n for e in usable])

    def to_json(self) -> dict[str, Any]:
        trends = {s: self.trend(s) for s in self.strategies if s != self.baseline}
        return {
            "ladder": asdict(self.ladder),
            "preset": self.preset,
            "command": self.command,
            "baseline": self.baseline,
            "metric": asdict(self.metric) if self.metric is not None else None,
            "rungs": [_budget_json(b) for b in self.rungs],
            "beyond": [_budget_json(b) for b in self.beyond],
            "effects": [asdict(e) for e in self.effects],
            "trends": {s: asdict(t) if t is not None else None for s, t in trends.items()},
            "matching": {k: asdict(m) for k, m in self.matching.items()},
            "gpu_hours": self.gpu_hours,
            "gpu": self.gpu,
        }


def _budget_json(b: RungBudget) -> dict[str, Any]:
    return {"value": b.rung.value, "folder": b.rung.folder, "overrides": list(b.rung.overrides), "body": b.body,
            "tokens_per_step": b.tokens_per_step, "steps": b.steps, "tokens": b.tokens}  # fmt: skip


def _metric(data: dict[str, Any]) -> str:
    """The deciding metric of a saved comparison: --metric's, else its task's default among the metrics it
    tested (``embtie.metrics.primary_among``: BLEU where tested, else perplexity)."""
    verdicts = data.get("verdicts", {})
    if data.get("metric") in verdicts:
        return str(data["metric"])
    return primary_among(verdicts).key


def rung_effects(data: dict[str, Any], budget: RungBudget) -> tuple[MetricInfo, list[RungEffect]]:
    """The effects of every strategy of one rung's results.json against its baseline."""
    key = _metric(data)
    v = data["verdicts"][key]
    info = MetricInfo(key, v["label"], v["relative"], v["margin"], v["higher_is_better"])
    by = {(r["strategy"], r["seed"]): r.get(key) for r in data["rows"]}
    out = []
    for strategy, d in v["decisions"].items():
        seeds = sorted(s for (name, s), x in by.items() if name == strategy and x is not None)
        pairs = [
            (float(by[(strategy, s)]), float(b)) for s in seeds if (b := by.get((data["baseline"], s))) is not None
        ]
        diff = paired_difference([a for a, _ in pairs], [b for _, b in pairs], Margin(v["margin"], v["relative"]))
        confidence = d.get("ci_confidence") or 1 - d["level"]
        out.append(RungEffect(budget.rung.value, budget.body, strategy, diff.n, diff.mean, diff.se,
                              (float(d["ci"][0]), float(d["ci"][1])), confidence, d["verdict"],
                              d.get("seeds_needed")))  # fmt: skip
    return info, out


def collect(
    ladder: Ladder,
    preset: str,
    command: str,
    strategies: list[str],
    budgets: list[RungBudget],
    out_dir: Path,
    baseline: str,
) -> LadderResults:
    """The finished rungs' effects (a rung with no results.json yet is left out of the effects). The baseline
    is ``baseline``, the ladder's ``--baseline``, from the start (before any rung has finished), unless the
    rungs' comparisons tested against another one: their results.json says which, and their effects are
    read against it."""
    metric, effects = None, []
    for b in budgets:
        path = Path(out_dir) / "rungs" / b.rung.folder / "results.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if not data.get("verdicts"):
            continue
        metric, found = rung_effects(data, b)
        baseline = str(data.get("baseline", baseline))
        effects += [e for e in found if not math.isnan(e.mean)]
    return LadderResults(ladder, preset, command, baseline, strategies, metric, budgets, [], effects)
