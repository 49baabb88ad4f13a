"""Every rung's token budget: ``tokens_per_param`` x the rung's body parameters, in whole steps.

The body is measured on the meta device (``planning.model_shape``: the model built the one way runs build
it, no weights allocated) from the rung's config with the baseline strategy; the body is the same for every
strategy of a rung (they differ in their embedding), so every arm trains the same steps of the same batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from embtie import tasks
from embtie.config import RunConfig, load_config
from embtie.errors import ConfigError
from embtie.ladder import sizes
from embtie.ladder.spec import SIZE_KEY, Ladder, Rung
from embtie.planning import estimate, model_shape
from embtie.tasks import Task


@dataclass(frozen=True)
class RungBudget:
    rung: Rung
    body: int
    """the rung's body (non-embedding) learned parameters."""
    tokens_per_step: float
    steps: int
    """ceil(tokens_per_param x body / tokens_per_step)."""

    @property
    def tokens(self) -> float:
        return self.steps * self.tokens_per_step

    def overrides(self) -> list[str]:
        """The rung's config changes and its step count."""
        return [*self.rung.overrides, f"train.max_steps={self.steps}", "train.epochs=null"]


class TaskCache:
    """One task per data section: the vocabulary and the training text do not change along a ladder."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}

    def get(self, cfg: RunConfig) -> Task:
        key = f"{cfg.task}|{cfg.data}"
        if key not in self._tasks:
            self._tasks[key] = tasks.get(cfg.task)(cfg)
        return self._tasks[key]


def rung_config(preset: str, overrides: list[str], rung: Rung, extra: list[str] | None = None) -> RunConfig:
    """The rung's config (a ConfigError naming the rung when its value does not fit the preset)."""
    try:
        return load_config(preset, [*overrides, *rung.overrides, *(extra or [])])
    except ConfigError as e:
        raise ConfigError(f"{rung.flag} rung {rung.value}: {e}") from None


def budgets(
    preset: str, overrides: list[str], ladder: Ladder, rungs: list[Rung], cache: TaskCache | None = None
) -> list[RungBudget]:
    """The budget of each of ``rungs`` of ``ladder`` on ``preset`` with the user's ``overrides``."""
    cache = cache or TaskCache()
    name = load_config(preset, overrides).model.name
    if ladder.key == SIZE_KEY and name not in sizes.SIZED_MODELS:
        raise ConfigError(
            f"--ladder size=... sets the shape of a {', '.join(sizes.SIZED_MODELS)} model, and {preset} trains "
            f"{name!r}; ladder one of its model keys instead, e.g. --ladder model.n_layers=1,2,4"
        )
    out = []
    for rung in rungs:
        cfg = rung_config(preset, overrides, rung)
        task = cache.get(cfg)
        body = model_shape.measure(cfg, task).body
        per_step = estimate.budget(cfg, task).tokens_per_step
        steps = max(1, math.ceil(ladder.tokens_per_param * body / per_step))
        out.append(RungBudget(rung, body, per_step, steps))
    return out
