"""Confirmation on fresh seeds, and one verdict pooled over machines with the machine as a block.

**Confirmation.** A decided verdict is a claim about the next seeds too: re-running the same design on
seeds none of the first runs used, on the machine at hand, either gives the same verdict (*confirmed*),
a decided verdict that cannot hold beside it (*contradicted*: better against worse, or equivalent against
a difference beyond the margin), or neither (*undecided*) — ``confirmation``.

**Pooling over machines.** Paired differences measured on several machines (CPU models, kernel paths,
GPUs) are pooled with the machine as a fixed block: the machine may shift a strategy's difference to the
baseline (a kernel path once decided whether tied's training survived its initial loss), so the estimate
is the unweighted mean of the machines' mean differences (every machine counts once), its standard error
s / M * sqrt(sum 1/n_m) from the within-machine spread s pooled over the M machines, with N - M degrees of
freedom (N pairs in all). With one machine this is the paired t-test of ``paired``. ``BlockedDifference``
is a ``PairedDifference``, so the same tests and the same one-family rule (``verdict.decide_all``) decide it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from embtie.decisions.margins import Margin
from embtie.decisions.paired import PairedDifference, paired_difference
from embtie.decisions.verdict import Decision

CONFIRMATIONS = ("confirmed", "contradicted", "undecided")


@dataclass(frozen=True)
class BlockedDifference(PairedDifference):
    """Paired differences in blocks (one per machine): ``blocks[i]`` is the block of ``diffs[i]``."""

    blocks: tuple[str, ...] = ()

    def _groups(self) -> list[np.ndarray]:
        d = np.asarray(self.diffs, dtype=float)
        names = list(dict.fromkeys(self.blocks))
        return [d[[b == name for b in self.blocks]] for name in names]

    @cached_property
    def mean(self) -> float:
        groups = self._groups()
        return float(np.mean([g.mean() for g in groups])) if groups else math.nan

    @cached_property
    def sd(self) -> float:
        """The within-block spread, pooled over blocks (nan without a degree of freedom)."""
        if self.df < 1:
            return math.nan
        return math.sqrt(sum(float(((g - g.mean()) ** 2).sum()) for g in self._groups()) / self.df)

    @property
    def se(self) -> float:
        groups = self._groups()
        if self.df < 1:
            return math.nan
        return self.sd / len(groups) * math.sqrt(sum(1.0 / len(g) for g in groups))

    @property
    def df(self) -> int:
        return self.n - len(set(self.blocks))


def blocked_difference(
    by_machine: Mapping[str, tuple[Sequence[float], Sequence[float]]], margin: Margin
) -> BlockedDifference:
    """The pooled difference of (strategy values, baseline values) per machine, each pair of series in
    the same seed order."""
    diffs: list[float] = []
    blocks: list[str] = []
    for machine, (values, baseline) in by_machine.items():
        d = paired_difference(values, baseline, margin).diffs
        diffs += d
        blocks += [machine] * len(d)
    return BlockedDifference(tuple(diffs), margin, tuple(blocks))


def confirmation(original: Decision, fresh: Decision) -> str:
    """How a verdict on fresh seeds bears on the original: confirmed, contradicted or undecided."""
    if fresh.verdict == "undecided" or original.verdict == "undecided":
        return "undecided"
    if fresh.verdict == original.verdict:
        return "confirmed"
    pair = {original.verdict, fresh.verdict}
    if pair == {"better", "worse"}:
        return "contradicted"
    # equivalent beside better/worse: both hold when the difference is real but inside the margin
    difference = fresh if fresh.verdict != "equivalent" else original
    lo, hi = difference.ci
    return "contradicted" if min(abs(lo), abs(hi)) >= difference.margin else "confirmed"
