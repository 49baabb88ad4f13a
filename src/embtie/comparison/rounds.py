"""Rounds of seeds for ``embtie compare --until-decided``: train the first look's seeds of every
strategy, decide what can be decided on the primary metric, train the next look's seeds for the
baseline and the strategies still undecided, and so on until everything is decided or the design's last
look is reached (``embtie.decisions.sequential``). What to train next is a function of the finished
runs on disk, so an interrupted comparison continues where it stopped and ``--report-only`` sees the
same rounds."""

from __future__ import annotations

from dataclasses import replace

from embtie.comparison.launchers.base import Launcher
from embtie.comparison.launchers.local import LocalLauncher
from embtie.comparison.plan import BASELINE, CompareSpec, plan
from embtie.comparison.results import finished_runs, read_run, result_row
from embtie.comparison.verdicts import metric_verdicts
from embtie.decisions import SequentialDesign
from embtie.decisions.sequential import seeds_wanted
from embtie.errors import ConfigError
from embtie.metrics import margins_with, primary


def _design(spec: CompareSpec) -> SequentialDesign:
    if spec.design is None:
        raise ConfigError("rounds of seeds need a sequential design (--until-decided)")
    if spec.baseline not in spec.strategies:
        raise ConfigError(
            f"--until-decided compares every strategy with {spec.baseline}; add it to --strategies"
            + ("" if spec.baseline != BASELINE else ", or name another listed one with --baseline")
        )
    return spec.design


def next_counts(spec: CompareSpec, counts: dict[str, int]) -> dict[str, int]:
    """The seeds every strategy should have after the next round, from the runs finished so far."""
    design = _design(spec)
    rows = [result_row(read_run(r, spec)) for r in finished_runs(plan(replace(spec, seed_counts=counts)))]
    have = {s: sum(1 for r in rows if r.strategy == s) for s in spec.strategies if s != spec.baseline}
    metric = primary(rows, spec.metric)
    margin = margins_with(spec.margins)[metric.margin_key]
    verdicts = metric_verdicts(rows, spec.baseline, metric, margin, design) if rows else None
    decided = {} if verdicts is None else {s: d for s in have if (d := verdicts.decision(s)) is not None}
    want = seeds_wanted(design, decided, have)
    want[spec.baseline] = max(want.values(), default=design.first)
    return want


def run_until_decided(spec: CompareSpec, progress: bool = True, launcher: Launcher | None = None) -> dict[str, int]:
    """Train round after round (with ``launcher``, by default this process); returns the seeds each strategy
    ended with. A round whose runs did not all finish (a run failed on a cluster) stops with ``LaunchError``."""
    launcher = launcher or LocalLauncher()
    counts = {s: _design(spec).first for s in spec.strategies}
    while True:
        launcher.launch(replace(spec, seed_counts=counts), progress=progress).require_complete()
        following = next_counts(spec, counts)
        if following == counts:
            return counts
        counts = following


def settled_counts(spec: CompareSpec) -> dict[str, int]:
    """The rounds the finished runs on disk have completed (``--report-only``): the seeds each strategy
    has in the last round whose runs are all finished, or in the round under way."""
    counts = {s: _design(spec).first for s in spec.strategies}
    while all(r.done for r in plan(replace(spec, seed_counts=counts))):
        following = next_counts(spec, counts)
        if following == counts:
            break
        counts = following
    return counts
