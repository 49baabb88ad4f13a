"""Rounds of seeds for ``embtie compare --until-decided``: train the first look's seeds of every
strategy, decide what can be decided on the primary metric (every pair of strategies, one family:
``comparison.choice``), train the next look's seeds for the strategies of the pairs still undecided, and
so on until the choice among them is decided or the design's last look is reached
(``embtie.decisions.sequential``). What to train next is a function of the finished
runs on disk, so an interrupted comparison continues where it stopped and ``--report-only`` sees the
same rounds."""

from __future__ import annotations

from dataclasses import replace

from embtie.comparison.choice import primary_choice
from embtie.comparison.design_file import read_design, record_planned
from embtie.comparison.grid import BASELINE, CompareSpec, plan
from embtie.comparison.launchers.base import Launcher
from embtie.comparison.launchers.local import LocalLauncher
from embtie.comparison.results import finished_runs, read_run, result_row
from embtie.decisions import SequentialDesign
from embtie.decisions.choice import seeds_wanted_for_choice
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
    """The seeds every strategy should have after the next round, from the runs finished so far: none
    more once the choice among the strategies is decided on the primary metric; else the next look for
    the strategies of the pairs still undecided (``decisions.choice.seeds_wanted_for_choice``)."""
    design = _design(spec)
    rows = [result_row(read_run(r, spec)) for r in finished_runs(plan(replace(spec, seed_counts=counts)))]
    have = {s: sum(1 for r in rows if r.strategy == s) for s in spec.strategies}
    metric = primary(rows, spec.metric)
    margin = margins_with(spec.margins)[metric.margin_key]
    choice = primary_choice(rows, spec.strategies, spec.baseline, metric, margin, design) if rows else None
    if choice is None:
        return {s: max(n, design.first) for s, n in have.items()}
    want = seeds_wanted_for_choice(design, choice, have)
    want[spec.baseline] = max(want.values(), default=design.first)  # the baseline's seeds pair with every look
    return want


def run_until_decided(spec: CompareSpec, progress: bool = True, launcher: Launcher | None = None) -> dict[str, int]:
    """Train round after round (with ``launcher``, by default this process); returns the seeds each strategy
    ended with. A round whose runs did not all finish (a run failed on a cluster) stops with ``LaunchError``."""
    launcher = launcher or LocalLauncher()
    counts = {s: _design(spec).first for s in spec.strategies}
    fixed = read_design(spec.out_dir)
    while True:
        round_spec = replace(spec, seed_counts=counts)
        if fixed is not None:  # each run of the round records the design it starts under
            record_planned(spec.out_dir, [r.run_dir for r in plan(round_spec) if not r.trained], fixed)
        launcher.launch(round_spec, progress=progress).require_complete()
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
