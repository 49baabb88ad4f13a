"""Sequential seeding: ``embtie compare --until-decided`` adds seeds in rounds and stops a comparison as
soon as it is decided, while keeping its error rates under this optional stopping.

The design looks at n_1 < n_2 < ... < n_J seeds (``first``, then ``step`` more per round, up to
``max_seeds``) and spends the level alpha evenly over the J looks: every test at a look runs at
alpha / J. By the union bound (Bonferroni over looks, the simplest valid alpha-spending rule: Jennison &
Turnbull, *Group Sequential Methods*, 2000, ch. 2), whatever the dependence between looks and whichever
look stops a comparison, the probability of any false "better/worse", or of any "equivalent" when the
true difference is at the margin, is at most alpha, and the interval reported at the look that stops
covers the true difference with probability at least 1 - alpha. Pocock's or O'Brien-Fleming's boundaries
spend alpha less conservatively but assume a normal statistic of known variance; with 4-10 seeds the
t statistic is far from that, so this design keeps the simple bound. The simulation in
tests/decisions/test_sequential.py checks all three rates.

A decided comparison's verdict is final: later rounds train seeds only for the baseline and for the
comparisons still undecided, and the verdicts are replayed from the per-seed values on disk (a pure
function of them), so an interrupted run continues where it stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from embtie.decisions.margins import Margin
from embtie.decisions.paired import PairedDifference, paired_difference
from embtie.decisions.power import seeds_to_decide
from embtie.decisions.verdict import ONE_FAMILY, RULES, Decision, decide_all
from embtie.errors import ConfigError


@dataclass(frozen=True)
class SequentialDesign:
    """Looks at ``first``, ``first + step``, ... seeds, the last one at ``max_seeds``; level ``alpha`` overall."""

    first: int = 4
    step: int = 2
    max_seeds: int = 10
    alpha: float = 0.05
    rule: str = ONE_FAMILY
    """how each look's tests are corrected (``verdict.RULES``): one family since 2026-11-28."""

    def __post_init__(self) -> None:
        if self.first < 2:
            raise ConfigError(f"the first look needs >= 2 seeds (a paired interval), got {self.first}")
        if self.step < 1:
            raise ConfigError(f"seeds per round must be >= 1, got {self.step}")
        if self.max_seeds < self.first:
            raise ConfigError(f"--max-seeds {self.max_seeds} is below the first look's {self.first} seeds")
        if not 0 < self.alpha < 1:
            raise ConfigError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.rule not in RULES:
            raise ConfigError(f"decision rule {self.rule!r} is not one of {', '.join(RULES)}")

    @property
    def looks(self) -> tuple[int, ...]:
        out = list(range(self.first, self.max_seeds, self.step))
        return (*out, self.max_seeds)

    @property
    def alpha_per_look(self) -> float:
        return self.alpha / len(self.looks)

    def description(self) -> str:
        looks = ", ".join(str(n) for n in self.looks)
        return (f"looks at {looks} seeds, each test at level {self.alpha:g}/{len(self.looks)} = "
                f"{self.alpha_per_look:.4f} (Bonferroni over looks: overall error <= {self.alpha:g})")  # fmt: skip


def replay(
    design: SequentialDesign,
    values: Mapping[str, Sequence[float]],
    baseline: Sequence[float],
    margin: Margin,
    higher_is_better: bool,
    with_power: bool = True,
) -> dict[str, Decision]:
    """The decision of every strategy under ``design`` from its per-seed values (seed order, paired
    with ``baseline``'s): at each look the strategies still undecided that have that many seeds are
    tested (one step-down family over them at the look's level, ``verdict.step_down``); the first
    decided verdict is final. A strategy that
    ends undecided gets the decision at its last complete look, with the seeds it would need unless
    ``with_power`` is False."""
    final: dict[str, Decision] = {}
    last_diffs: dict[str, PairedDifference] = {}
    for n in design.looks:
        active = [k for k in values if k not in final or final[k].verdict == "undecided"]
        ready = [k for k in active if len(values[k]) >= n and len(baseline) >= n]
        if not ready:
            continue
        diffs = {k: paired_difference(values[k][:n], baseline[:n], margin) for k in ready}
        last_diffs.update(diffs)
        final.update(decide_all(diffs, higher_is_better, design.alpha_per_look, with_power=False, rule=design.rule))
    if with_power:  # how far an undecided comparison is from a decision, at its last look
        final = {k: with_seeds_needed(d, last_diffs[k].sd, design.rule) for k, d in final.items()}
    return final


def with_seeds_needed(d: Decision, sd: float, rule: str = ONE_FAMILY) -> Decision:
    """An undecided decision with the seeds that would decide it at the level its test ran at (its
    step's; the look's level under the rule before); a decided one as it is."""
    if d.verdict != "undecided":
        return d
    c_diff, c_eq = d.confidences()
    at = ((1 - c_eq) / 2 if abs(d.mean) < d.margin else 1 - c_diff) if rule == ONE_FAMILY else d.level
    return replace(d, seeds_needed=seeds_to_decide(d.mean, sd, d.margin, at))


def seeds_wanted(
    design: SequentialDesign, decisions: Mapping[str, Decision], have: Mapping[str, int]
) -> dict[str, int]:
    """Seeds each strategy should have after the next round: a decided one keeps what it has; an
    undecided one (or one never looked at) moves to the next look above what it has. The caller gives
    the baseline the largest of these."""
    out: dict[str, int] = {}
    for k, n in have.items():
        d = decisions.get(k)
        decided = d is not None and d.verdict != "undecided"
        out[k] = n if decided else next((look for look in design.looks if look > n), n)
    return out
