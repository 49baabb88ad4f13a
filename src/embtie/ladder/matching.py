"""``--match params`` / ``--match flops``: deepen the arms that save parameters (or FLOPs) until every arm
has the largest arm's learned parameters (or training FLOPs per token) within a tolerance -- MobileLLM's
comparison (Liu et al. 2024: a tied model spends the V d it saves on depth).

The body is adjusted by depth, the one way to move a GPT's size where its width is the embedding width
(``models.gpt``: changing d would change the very tables under test). Depth moves in whole blocks, so the
nearest depth is found from two measurements (the arm at its own depth and one block deeper: a block's
size is the same at every depth), measured once more, and refused when its gap exceeds the tolerance.
"""

from __future__ import annotations

from dataclasses import replace

from embtie import comparison
from embtie.comparison import CompareSpec, invariants
from embtie.comparison.arms import MATCH_MODES, ArmAdjustment, Matching
from embtie.config import RunConfig
from embtie.errors import ConfigError
from embtie.ladder.budget import TaskCache
from embtie.planning import estimate, model_shape

DEPTH_KEYS = {"gpt": "model.n_layers"}
"""model name -> the config key of its depth, for the models whose width is the embedding width."""


def measure(cfg: RunConfig, mode: str, cache: TaskCache) -> float:
    """The learned parameters (``params``) or training FLOPs per token (``flops``) of the model ``cfg`` trains."""
    task = cache.get(cfg)
    shape = model_shape.measure(cfg, task)
    if mode == "params":
        return float(shape.learned)
    return estimate.flops_per_token(shape, estimate.budget(cfg, task).context)


def _deepened(cfg: RunConfig, key: str, depth: int) -> RunConfig:
    return cfg.replace({key: depth})


def _adjust(label: str, cfg: RunConfig, target: float, mode: str, tolerance: float, cache: TaskCache) -> ArmAdjustment:
    """The depth that brings one arm nearest to ``target`` (at least its own)."""
    key = DEPTH_KEYS[cfg.model.name]
    section, field = key.split(".", 1)
    depth = int(cfg.to_dict()[section][field])
    value = measure(cfg, mode, cache)
    if abs(value - target) <= tolerance * target:
        return ArmAdjustment(label, key, depth, depth, value, value)
    block = measure(_deepened(cfg, key, depth + 1), mode, cache) - value
    best = max(depth, depth + round((target - value) / block))
    after = measure(_deepened(cfg, key, best), mode, cache)
    if abs(after - target) > tolerance * target:
        raise ConfigError(
            f"--match {mode}: {label} at {key}={best} has {after:,.0f} against {target:,.0f} "
            f"({100 * (after / target - 1):+.1f}%, beyond the tolerance {100 * tolerance:g}%): one block is "
            f"{block:,.0f}; raise --match-tolerance or match a larger model"
        )
    return ArmAdjustment(label, key, depth, best, after, value)


def match(spec: CompareSpec, mode: str, tolerance: float, cache: TaskCache | None = None) -> CompareSpec:
    """``spec`` with every arm's body brought to the largest arm's ``mode`` (a ConfigError when no depth
    gets within ``tolerance``, or the model has no depth to adjust)."""
    if mode not in MATCH_MODES:
        raise ConfigError(f"--match {mode!r} is not one of {', '.join(MATCH_MODES)}")
    if not 0 < tolerance < 1:
        raise ConfigError(f"--match-tolerance {tolerance:g} must be a fraction in (0, 1), e.g. 0.05 for 5%")
    depth = {k: f"--match {mode} sets for every arm" for k in DEPTH_KEYS.values()}
    invariants.check_variants(spec.variants, spec.strategy_text, depth)
    cache = cache or TaskCache()
    first: dict[str, RunConfig] = {}
    for r in comparison.plan(replace(spec, matching=None, seeds=1, seed_counts={}), folders=False):
        first.setdefault(r.strategy, r.cfg)
    name = next(iter(first.values())).model.name
    if name not in DEPTH_KEYS:
        raise ConfigError(
            f"--match adjusts the depth of a model whose width is the embedding width ({', '.join(DEPTH_KEYS)}); "
            f"this comparison trains {name!r}: leave out --match"
        )
    values = {label: measure(cfg, mode, cache) for label, cfg in first.items()}
    target = max(values.values())
    arms = tuple(_adjust(label, cfg, target, mode, tolerance, cache) for label, cfg in first.items())
    return replace(spec, matching=Matching(mode, tolerance, target, arms))
