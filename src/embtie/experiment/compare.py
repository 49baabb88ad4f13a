"""``run_comparison``: a comparison from Python, as ``embtie compare`` runs it. Train every strategy x seed
(finished runs skipped, interrupted ones resumed; rounds of seeds with ``until_decided``), evaluate the test
split with ``test``, collect the results, write results.csv/json and the report, and return them typed."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embtie.experiment.request import ComparisonRequest

if TYPE_CHECKING:
    from embtie.comparison import CompareSpec, Comparison, MetricVerdicts, PlannedRun
    from embtie.comparison.launchers import Launched, Launcher

Log = Callable[[str], None]
"""where a driver writes its lines (``print`` for a command; ``lambda line: None`` to keep quiet)."""


@dataclass
class ComparisonResult:
    """What a comparison produced: its spec, the runs finished, the collected results (verdicts and choice
    included) and the files written. ``comparison`` is None when nothing is reported (a dry run, or no run
    finished yet)."""

    spec: CompareSpec
    status: int = 0
    """``embtie compare``'s exit status: 1 when runs failed (``launched.failed``), else 0."""
    runs: list[PlannedRun] = field(default_factory=list)
    """the finished runs the results were collected from."""
    comparison: Comparison | None = None
    launched: Launched | None = None
    """what the launch left (failed runs, runs in flight); None when nothing was launched here."""
    report_md: Path | None = None
    report_html: Path | None = None
    results_csv: Path | None = None
    results_json: Path | None = None
    lines: list[str] = field(default_factory=list)
    """the summary ``embtie compare`` prints: counts, one verdict sentence per strategy, files, the choice."""

    @property
    def verdicts(self) -> dict[str, MetricVerdicts]:
        """tested metric -> its verdicts against the baseline ({} when nothing was reported)."""
        return {} if self.comparison is None else self.comparison.verdicts

    @property
    def choice(self) -> dict[str, Any] | None:
        """The primary metric's choice among all the strategies (``comparison.choice.choice_to_json``)."""
        return next((v.choice for v in self.verdicts.values() if v.choice is not None), None)


def run_comparison(request: ComparisonRequest, log: Log = print) -> ComparisonResult:
    """Run the comparison ``request`` asks for (a ConfigError of one line before anything is written when it
    cannot run) and return what it produced; the summary lines go to ``log``. A ladder:
    ``embtie.experiment.run_ladder``."""
    from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE
    from embtie.errors import ConfigError
    from embtie.rundir import lock

    if request.ladder is not None:
        raise ConfigError("a ladder is a list of comparisons: run it with embtie.experiment.run_ladder")
    spec = request.to_spec()
    launcher = request.local_launcher()
    if request.match is not None:
        from embtie.ladder import matching

        tolerance = request.match_tolerance if request.match_tolerance is not None else DEFAULT_MATCH_TOLERANCE
        spec = matching.match(spec, request.match, tolerance)
    if request.dry_run:
        dry_run(spec, launcher, log)
        return ComparisonResult(spec)
    with lock.hold(spec.out_dir, "comparison", lock.command_line()):  # one writer per output folder
        return compare(spec, request, launcher, log)


def dry_run(spec: CompareSpec, launcher: Launcher, log: Log) -> None:
    """Log the plan (one line per run) and touch nothing."""
    from embtie import comparison

    comparison.plan(spec)  # every config checked (ConfigError) before anything is printed
    rounds = " (the first round of --until-decided)" if spec.design is not None else ""
    lines = launcher.plan_lines(spec)
    log(f"plan: {len(lines)} runs{rounds} with --launcher {launcher.name}; nothing is trained or submitted")
    for line in lines:
        log(line)


def compare(spec: CompareSpec, request: ComparisonRequest, launcher: Launcher, log: Log) -> ComparisonResult:
    """Train (unless ``report_only``), collect and report ``spec`` (its folder already held by the caller)."""
    from embtie import comparison

    t0 = time.perf_counter()
    if not request.report_only:
        _check_before_writing(spec)
        _fix_design(spec)
    spec, launched = _train(spec, request, launcher)
    runs = comparison.finished_runs(comparison.plan(spec))
    if not runs and launched is not None:
        return ComparisonResult(spec, _unfinished(launched, 0, log), launched=launched)  # nothing to report yet
    if spec.test:  # after every look: the test split never decides anything
        from embtie.comparison import held_out

        held_out.evaluate_all(runs, spec.test_file, progress=request.progress)
    result = _report(spec, runs, t0)
    for line in result.lines:
        log(line)
    result.launched = launched
    result.status = _unfinished(launched, len(runs), log)
    return result


def _report(spec: CompareSpec, runs: list[PlannedRun], t0: float) -> ComparisonResult:
    """Collect the finished runs, write the tables and the report; the result with its summary lines (the
    seconds since ``t0``, a ``time.perf_counter()``, first)."""
    from embtie import comparison
    from embtie.reporting import comparison_report, document

    out = spec.out_dir
    results = comparison.collect(spec, runs)
    csv_path, json_path = comparison.write_tables(results, out)
    report = comparison_report.build(results, out)
    if spec.matching is not None:  # how the arms were matched, first: every figure below depends on it
        from embtie.reporting.sections.matching import matching_blocks

        report.blocks[0:0] = matching_blocks(spec.matching)
    md, page = document.write(report, out)
    seeds = "/".join(str(spec.seeds_of(s)) for s in spec.strategies) if spec.seed_counts else str(spec.seeds)
    lines = [f"compared {len(spec.strategies)} strategies x {seeds} seeds in {time.perf_counter() - t0:.0f} s"]
    lines += [f"  {line}" for line in comparison_report.verdict_lines(results, out)]
    lines += [f"report: {page.resolve()}", f"        {md.resolve()}"]
    lines.append(f"tables: {csv_path.resolve()}, {json_path.resolve()}")
    # the answer last: which strategy to use
    lines += [line.replace("`", "") for line in comparison_report.choice_lines(results, out)]
    return ComparisonResult(spec, 0, runs, results, None, md, page, csv_path, json_path, lines)


def _check_before_writing(spec: CompareSpec) -> None:
    """Everything a comparison can be refused for, before it writes anything: every planned config
    (``comparison.plan``), the output folder, and the data each distinct data section trains on."""
    from embtie import comparison, tasks
    from embtie.rundir.folders import check_out_dir, warn_held_out_copies

    runs = comparison.plan(spec)
    check_out_dir(spec.out_dir)
    checked: list[object] = []
    for r in runs:
        key = (r.cfg.task, r.cfg.data)
        if key not in checked:
            tasks.get(r.cfg.task).check_data(r.cfg)
            warn_held_out_copies(r.cfg.data)
            checked.append(key)


def _train(spec: CompareSpec, request: ComparisonRequest, launcher: Launcher) -> tuple[CompareSpec, Launched | None]:
    """Train (or, with report_only, look at) the runs; the spec with the rounds run, and the launch's outcome."""
    from embtie.comparison import rounds

    if spec.design is not None:
        counts = (
            rounds.settled_counts(spec)
            if request.report_only
            else rounds.run_until_decided(spec, progress=request.progress, launcher=launcher)
        )
        return replace(spec, seed_counts=counts), None
    if request.report_only:
        return spec, None
    return spec, launcher.launch(spec, progress=request.progress)


def _unfinished(launched: Launched | None, finished: int, log: Log) -> int:
    """Say what is left of a launch (failed runs and their logs on stderr, runs in flight); the exit status."""
    if launched is None or launched.complete:
        return 0
    for f in launched.failed:
        print(f"embtie compare: error: {f.describe()}", file=sys.stderr)
    left = []
    if launched.failed:
        left.append(f"{len(launched.failed)} failed (run the same command again to resubmit them; they resume)")
    if launched.in_flight:
        left.append(f"{len(launched.in_flight)} still queued or running (run the same command again to collect them)")
    log(f"{finished} of {len(launched.runs)} runs finished; " + "; ".join(left))
    return 1 if launched.failed else 0


def _fix_design(spec: CompareSpec) -> None:
    """DIR/design.json written before the first run this command trains (or checked against the one the
    folder holds: another design is refused in one line), and every planned run's design record."""
    from embtie import comparison
    from embtie.comparison import design_file
    from embtie.rundir import lock

    planned = comparison.plan(spec)
    for r in planned:  # a run another process trains: refused here, before the design is written
        if r.run_dir.is_dir() and not r.trained:
            with lock.hold(r.run_dir, "training", lock.command_line()):
                pass
    fixed = design_file.fix_design(spec.out_dir, design_file.Design.of(spec), sum(r.trained for r in planned))
    design_file.record_planned(spec.out_dir, [r.run_dir for r in planned if not r.trained], fixed)
