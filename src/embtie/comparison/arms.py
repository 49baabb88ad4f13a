"""Parameter- or FLOP-matched arms (``embtie compare --match``): the record of how the body of each arm was
adjusted so that every arm has the same learned parameters (or training FLOPs per token) within a tolerance.
The adjustment itself is computed in ``embtie.ladder.matching`` (it measures models on the meta device);
``comparison.grid`` applies the record's overrides to each arm's config.
"""

from __future__ import annotations

from dataclasses import dataclass

MATCH_MODES = ("params", "flops")
"""params: learned parameters; flops: training FLOPs per token (6 N + attention, ``planning.estimate``)."""

DEFAULT_MATCH_TOLERANCE = 0.05


def match_text(mode: str, tolerance: float) -> str:
    """How a design records a match (design.json's ``match``, e.g. ``params:0.05``)."""
    return f"{mode}:{tolerance:g}"
"""the largest relative gap |arm - target| / target a matched arm may keep. Depth moves in whole blocks, and
one block of ptb-gpt-tiny (d = 128) is 197 k parameters, 6.7% of untied's 2.95 M: half a block (3.3%) is the
gap the nearest depth can leave there, so 5% is the tightest round figure that every rung of a ladder meets."""


@dataclass(frozen=True)
class ArmAdjustment:
    strategy: str
    key: str
    """the config key adjusted (the body's depth, e.g. model.n_layers)."""
    before: int
    after: int
    value: float
    """the arm's learned parameters (or FLOPs per token) after the adjustment."""
    unadjusted: float
    """the same before it."""


@dataclass(frozen=True)
class Matching:
    mode: str
    """one of ``MATCH_MODES``."""
    tolerance: float
    target: float
    """the largest arm's value: every other arm is brought to it."""
    arms: tuple[ArmAdjustment, ...]

    def overrides_of(self, strategy: str) -> list[str]:
        """The config overrides of one arm (none for an arm left as it was)."""
        return [f"{a.key}={a.after}" for a in self.arms if a.strategy == strategy and a.after != a.before]

    def gap(self, arm: ArmAdjustment) -> float:
        """(arm - target) / target after the adjustment."""
        return (arm.value - self.target) / self.target

    @property
    def what(self) -> str:
        return "learned parameters" if self.mode == "params" else "training FLOPs per token"
