"""``run_ladder``: ``embtie compare --ladder`` from Python. The same comparison at every rung of the ladder
(``embtie.ladder.driver.plan_ladder``: each in DIR/rungs/<rung>, resumable), then the ladder's results
(DIR/ladder.json), its report and the trend of each strategy's effect against body size."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from embtie.experiment.compare import ComparisonResult, Log, compare, dry_run
from embtie.experiment.request import ComparisonRequest

if TYPE_CHECKING:
    from embtie.comparison import CompareSpec
    from embtie.ladder.driver import LadderPlan
    from embtie.ladder.results import LadderResults


@dataclass
class LadderResult:
    """What a ladder produced: its plan, each rung's comparison (in the order of the rungs; a rung with no
    finished run under ``report_only`` is left out), the ladder's results and the files written (None for a
    dry run)."""

    plan: LadderPlan
    status: int = 0
    """``embtie compare``'s exit status: the largest of the rungs'."""
    rungs: list[ComparisonResult] = field(default_factory=list)
    results: LadderResults | None = None
    ladder_json: Path | None = None
    report_md: Path | None = None
    report_html: Path | None = None


def run_ladder(request: ComparisonRequest, log: Log = print) -> LadderResult:
    """Run the ladder ``request.ladder`` asks for (a ConfigError of one line before anything is written when it
    cannot run), one comparison per rung, then the ladder's report; every rung's summary and the trends go
    to ``log``."""
    from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE
    from embtie.errors import ConfigError
    from embtie.ladder import driver
    from embtie.ladder import spec as ladder_spec
    from embtie.rundir import lock
    from embtie.rundir.folders import check_out_dir

    if request.ladder is None:
        raise ConfigError("a ladder needs ladder='KEY=V1,V2,...', e.g. ladder='size=xs,s'")
    spec = request.to_spec()
    launcher = request.local_launcher()
    if request.default_job:
        raise ConfigError("--ladder needs a preset, e.g. embtie compare ptb-gpt-tiny --ladder size=xs,s,m,l")
    if request.out is None:
        spec = replace(spec, out_dir=Path("runs") / f"ladder-{Path(spec.preset).stem}")
    ratio = request.tokens_per_param if request.tokens_per_param is not None else ladder_spec.DEFAULT_TOKENS_PER_PARAM
    ladder = ladder_spec.parse(request.ladder, ratio, request.extrapolate)
    tolerance = request.match_tolerance if request.match_tolerance is not None else DEFAULT_MATCH_TOLERANCE
    plan = driver.plan_ladder(spec, ladder, request.match, tolerance)
    rungs = list(zip(plan.budgets, plan.specs))
    result = LadderResult(plan)
    if request.dry_run:
        for i, (b, rung) in enumerate(rungs, 1):
            log(f"ladder rung {i}/{len(rungs)} {b.rung.value}: {b.body:,} body parameters, {b.steps:,} steps")
            dry_run(rung, launcher, log)
        return result
    check_out_dir(spec.out_dir)
    with lock.hold(spec.out_dir, "ladder", lock.command_line()):
        for i, (b, rung) in enumerate(rungs, 1):
            log(f"ladder rung {i}/{len(rungs)} {b.rung.value}: {b.body:,} body parameters, {b.steps:,} steps")
            if request.report_only and not _has_finished_runs(rung):
                continue
            with lock.hold(rung.out_dir, "comparison", lock.command_line()):
                result.rungs.append(compare(rung, request, launcher, log))
        result.status = max((r.status for r in result.rungs), default=0)
        _ladder_report(result, log)
    return result


def _has_finished_runs(spec: CompareSpec) -> bool:
    from embtie import comparison

    return bool(comparison.finished_runs(comparison.plan(spec)))


def _ladder_report(result: LadderResult, log: Log) -> None:
    """Collect the finished rungs, write DIR/ladder.json and the ladder's report, log the trends."""
    import json

    from embtie.files import write_atomic
    from embtie.ladder import driver
    from embtie.reporting import document, ladder_report

    plan = result.plan
    out = plan.base.out_dir
    results = driver.results(plan)
    result.results, result.ladder_json = results, out / "ladder.json"
    write_atomic(result.ladder_json, json.dumps(results.to_json(), indent=2) + "\n")
    result.report_md, result.report_html = document.write(ladder_report.build(results, out), out)
    unit = results.metric.unit if results.metric is not None else ""
    for s in plan.base.strategies:
        t = results.trend(s) if s != results.baseline else None
        if t is not None:
            lo, hi = t.slope_interval()
            log(f"  {s}: {t.slope:+.2f}{unit} per tenfold body [{lo:+.2f}, {hi:+.2f}] over {t.n} rungs")
    log(f"ladder report: {result.report_html.resolve()}")
    log(f"               {result.report_md.resolve()}")
