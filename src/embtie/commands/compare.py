"""``embtie compare``: train a grid of strategies x seeds and write a report with statistics and diagnostics."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from embtie.comparison import CompareSpec
    from embtie.comparison.launchers import Launched, Launcher
    from embtie.ladder.driver import LadderPlan

HELP = "compare sharing strategies over seeds: train (resumably), analyse, and write a report"
DESCRIPTION = (
    "Train every strategy x seed of a preset (finished runs are skipped, interrupted ones resumed), analyse "
    "each run, and write DIR/results.csv, results.json, report.md, report.html and the PNG plots. With no "
    "arguments: the default job (a small PTB comparison, about 10 minutes on 2 CPU cores)."
)
EXAMPLES = (
    "embtie compare",
    "embtie compare ptb-gpt-tiny --strategies tied,untied,l2norm --seeds 3 --jobs 2 --out runs/cmp train.threads=1",
    "embtie compare ptb-gpt-tiny --strategies tied,fixed-lr10=fixed:logit_scale_lr=10 --out runs/fixed",
    "embtie compare ptb-gpt-tiny --strategies tied,l2norm --until-decided --seeds 2 --max-seeds 6 --out runs/seq",
    "embtie compare ptb-gpt-tiny --strategies tied,untied,l2norm --seeds 3 --out runs/cmp"
    " --report-only train.threads=1",
    "embtie compare ptb-gpt-tiny --strategies tied,untied --seeds 2 --ladder size=xs,s --extrapolate 6xl"
    " --out runs/ladder train.threads=1",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from embtie import comparison, metrics
    from embtie.commands.common import MAX_SEEDS, number_arg, path_arg
    from embtie.decisions.sequential import SequentialDesign

    parser.add_argument(
        "args",
        nargs="*",
        metavar="[PRESET] [key=value ...]",
        help=f"preset name or YAML file (default {comparison.DEFAULT_PRESET}), then config overrides for every run, "
        "e.g. train.max_steps=300",
    )
    parser.add_argument(
        "--strategies",
        default=None,
        help=f"comma-separated strategies (default {','.join(comparison.DEFAULT_STRATEGIES)}; "
        "'all' = the twelve seed strategies + ngpt). A variant with options gets a label: "
        "LABEL=NAME:key=value:key=value, e.g. adaptive-l2norm=adaptive:within=l2norm; a dotted key is a config "
        "override of that arm alone, e.g. untied-lr2=untied:train.lr=0.002",
    )
    parser.add_argument(
        "--seeds",
        type=number_arg(int, "--seeds", ge=1, most=MAX_SEEDS),
        default=None,
        help=f"seeds per strategy (default {comparison.DEFAULT_SEEDS}; the default job: "
        f"{comparison.DEFAULT_JOB_SEEDS})",
    )
    parser.add_argument(
        "--first-seed",
        type=number_arg(int, "--first-seed", ge=0),
        default=0,
        help="seeds are FIRST, FIRST+1, ... (default 0); another base seed checks that the verdicts are stable",
    )
    parser.add_argument(
        "--out", type=path_arg("--out"), default=None, help="output folder (default runs/compare-<preset>)"
    )
    parser.add_argument(
        "--jobs",
        type=number_arg(int, "--jobs", ge=1, most=1024),
        default=None,
        help="train this many runs at once, each in its own process (e.g. one per CPU core with "
        "train.threads=1; default 1). The default job uses 2 when the machine has 2 or more cores",
    )
    parser.add_argument(
        "--margin",
        action="append",
        default=None,
        metavar="METRIC=VALUE[%],...",
        help=metrics.margin_help(),
    )
    parser.add_argument(
        "--until-decided",
        action="store_true",
        help="add seeds in rounds until every strategy is better, worse or equivalent to tied on the primary "
        "metric (perplexity, or BLEU for translation/captioning), or --max-seeds is reached; --seeds is the "
        "first round (default 4). Error rates hold under this optional stopping (alpha spent over the looks)",
    )
    parser.add_argument(
        "--max-seeds",
        type=number_arg(int, "--max-seeds", ge=2, most=MAX_SEEDS),
        default=None,
        help=f"the last look of --until-decided, at least --seeds (default {SequentialDesign.max_seeds})",
    )
    parser.add_argument(
        "--seeds-per-round",
        type=number_arg(int, "--seeds-per-round", ge=1, most=MAX_SEEDS),
        default=None,
        help=f"seeds added per round of --until-decided (default {SequentialDesign.step})",
    )
    _add_analysis_argument(parser)
    _add_ladder_arguments(parser)
    _add_launcher_arguments(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--report-only", action="store_true", help="train nothing: report the runs finished so far (partial grids)"
    )


def _add_analysis_argument(parser: argparse.ArgumentParser) -> None:
    """--analysis (how much each run is analysed: ``embtie.comparison.grid.analysis_level``), --metric (the
    tested metric that decides) and --test / --test-file (test verdicts beside the validation ones)."""
    from embtie import comparison, metrics
    from embtie.commands.common import path_arg
    from embtie.comparison.grid import FULL_ANALYSIS_MIN_STEPS

    parser.add_argument("--metric", choices=tuple(metrics.BY_FLAG), default=None, help=metrics.metric_help())
    parser.add_argument(
        "--test",
        action="store_true",
        help="after training, evaluate every finished run on the test split (the dataset's, or your data.test_file) "
        "and report test verdicts beside the validation ones, from the same paired tests; the test split never "
        "decides, stops or selects anything",
    )
    parser.add_argument(
        "--test-file",
        type=path_arg("--test-file", "my-corpus/test.txt"),
        default=None,
        metavar="PATH",
        help="with --test: the text to test on instead of the test split",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="LABEL",
        help=f"the strategy (a label of --strategies) every other one is tested against (default "
        f"{comparison.BASELINE}), e.g. untied to ask what a zero-initialised head changes against untied",
    )

    parser.add_argument(
        "--analysis",
        choices=comparison.ANALYSIS_CHOICES,
        default=None,
        help="how much each run is analysed after training. full: everything; light: no row updates, word "
        "similarity or update dynamics (the report drops those three sections); none: also no per-unit "
        "validation pass (no bootstrap table: verdicts from the seeds alone). auto (the default): full for "
        f"runs capped at {FULL_ANALYSIS_MIN_STEPS}+ steps (or uncapped), light for shorter ones",
    )


def _add_ladder_arguments(parser: argparse.ArgumentParser) -> None:
    """--ladder and its options, --match (docs/ladders.md)."""
    from embtie.commands.common import number_arg
    from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE, MATCH_MODES
    from embtie.ladder import sizes
    from embtie.ladder.spec import DEFAULT_TOKENS_PER_PARAM

    group = parser.add_argument_group("ladders and matched arms (docs/ladders.md)")
    group.add_argument(
        "--ladder",
        default=None,
        metavar="KEY=V1,V2,...",
        help="run the same comparison at each value of a config key (e.g. model.n_layers=1,2,4), or of size "
        f"(depth, width and heads of a gpt together: {','.join(sizes.SIZES)}), each rung in DIR/rungs/<rung> "
        "(resumable), and report the effect against body size with a fitted trend",
    )
    group.add_argument(
        "--tokens-per-param",
        type=number_arg(float, "--tokens-per-param", gt=0, most=1e6),
        default=None,
        metavar="R",
        help=f"(ladder) every arm of a rung trains on R x the rung's body (non-embedding) parameters tokens "
        f"(default {DEFAULT_TOKENS_PER_PARAM:g}, Hoffmann et al.'s compute-optimal ratio)",
    )
    group.add_argument(
        "--extrapolate",
        default=None,
        metavar="V1,V2",
        help="(ladder) values of the ladder's key not trained: the report gives the trend's prediction there, "
        "marked as an extrapolation, and the GPU-hours a run of them would take",
    )
    group.add_argument(
        "--match",
        choices=MATCH_MODES,
        default=None,
        help="deepen the body of the arms that save parameters (or FLOPs) until every arm has the largest arm's "
        "learned parameters (params) or training FLOPs per token (flops), within --match-tolerance",
    )
    group.add_argument(
        "--match-tolerance",
        type=number_arg(float, "--match-tolerance", gt=0, lt=1),
        default=None,
        metavar="FRACTION",
        help=f"(match) the largest relative gap to the target an arm may keep (default {DEFAULT_MATCH_TOLERANCE:g})",
    )


def _add_launcher_arguments(parser: argparse.ArgumentParser) -> None:
    """--launcher and the options of the Slurm launcher (docs/cluster.md)."""
    from embtie.commands.common import number_arg

    where = parser.add_argument_group("where the runs train (docs/cluster.md)")
    where.add_argument(
        "--launcher",
        choices=("local", "slurm"),
        default="local",
        help="local: on this machine (--jobs processes; the default); slurm: one Slurm job per run through submitit "
        "(pip install 'embtie[slurm]'), each resuming from its run's checkpoints when requeued",
    )
    where.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan, one line per run (strategy, seed, run folder, resources, train/resume/finished), "
        "and train or submit nothing",
    )
    where.add_argument(
        "--no-wait",
        action="store_true",
        help="(slurm) submit and exit; the same command run later collects the finished runs into the report and "
        "submits only runs whose jobs are no longer queued or running",
    )
    where.add_argument("--slurm-partition", default=None, metavar="NAME", help="(slurm) the partition of the jobs")
    where.add_argument(
        "--gpus-per-run",
        type=number_arg(int, "--gpus-per-run", ge=0, most=64),
        default=None,
        metavar="N",
        help="(slurm) GPUs per job: 0 (the default) or 1 (a run trains in one process; train.device=auto takes it)",
    )
    where.add_argument(
        "--time",
        default=None,
        metavar="TIME",
        help="(slurm) time limit per job: MINUTES, HH:MM:SS or D-HH:MM:SS (default 60 minutes; a job that reaches "
        "it is requeued and resumes, up to 3 times)",
    )
    where.add_argument(
        "--mem", default=None, metavar="SIZE", help="(slurm) memory per job, e.g. 16G (default: the partition's)"
    )
    where.add_argument(
        "--slurm-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="(slurm) any further sbatch flag, repeatable: --slurm-arg qos=high --slurm-arg constraint=a100",
    )
    where.add_argument(
        "--poll",
        type=number_arg(float, "--poll", gt=0, most=86_400),
        default=None,
        metavar="SECONDS",
        help="(slurm) seconds between looks at the queue while waiting (default 30)",
    )


def _launcher(args: argparse.Namespace, default_job: bool) -> Launcher:
    """The launcher the options ask for (a ConfigError when they do not fit together)."""
    from embtie import cheap, comparison
    from embtie.comparison.launchers import LocalLauncher, SlurmLauncher, SlurmResources, slurm, slurm_resources
    from embtie.errors import ConfigError

    slurm_only = {
        "--no-wait": args.no_wait or None,
        "--slurm-partition": args.slurm_partition,
        "--gpus-per-run": args.gpus_per_run,
        "--time": args.time,
        "--mem": args.mem,
        "--slurm-arg": args.slurm_arg or None,
        "--poll": args.poll,
    }
    if args.launcher == "local":
        given = [flag for flag, value in slurm_only.items() if value is not None]
        if given:
            raise ConfigError(f"{given[0]} is an option of --launcher slurm; add --launcher slurm or leave it out")
        jobs = args.jobs if args.jobs is not None else (comparison.default_jobs() if default_job else 1)
        return LocalLauncher(cheap.cap(jobs, 1))  # EMBTIE_CHEAP: no worker processes for runs of a few steps
    if args.jobs is not None:
        raise ConfigError("--jobs is for --launcher local; on Slurm every run is a job of its own")
    if args.no_wait and args.until_decided:
        raise ConfigError("--until-decided waits for each round to decide the next; leave out --no-wait")
    resources = SlurmResources(
        partition=args.slurm_partition,
        gpus_per_run=args.gpus_per_run or 0,
        time_min=slurm_resources.parse_time(args.time) if args.time is not None else slurm_resources.DEFAULT_TIME_MIN,
        mem=slurm_resources.parse_mem(args.mem) if args.mem is not None else None,
        extra=slurm_resources.parse_slurm_args(args.slurm_arg),
    )
    return SlurmLauncher(resources, wait=not args.no_wait, poll_s=args.poll if args.poll is not None else slurm.POLL_S)


def _spec(args: argparse.Namespace) -> tuple[CompareSpec, bool]:
    """The comparison the arguments ask for, and whether it is the default job."""
    from embtie import cheap, comparison, sharing
    from embtie.commands.common import split_preset
    from embtie.decisions import SequentialDesign, parse_margins
    from embtie.errors import ConfigError
    from embtie.metrics import DEFAULT_MARGINS

    given, overrides = split_preset(args.args)
    _check_no_idle_options(args, overrides)
    if args.max_seeds is not None and args.seeds is not None and args.max_seeds < args.seeds:
        raise ConfigError(f"--max-seeds {args.max_seeds} must be >= --seeds {args.seeds}")
    default_job = given is None
    preset = comparison.DEFAULT_PRESET if given is None else given
    if default_job:
        overrides = [*comparison.DEFAULT_OVERRIDES, *overrides]
    if args.strategies is None:
        strategies = list(comparison.DEFAULT_STRATEGIES)
    elif args.strategies.strip() == "all":
        strategies = [*sharing.SEED_STRATEGIES, "ngpt"]
    else:
        strategies = comparison.split_strategies(args.strategies)
    parsed = [comparison.parse_strategy(item) for item in strategies]
    design = None
    if args.until_decided:
        first = args.seeds if args.seeds is not None else SequentialDesign.first
        if first < 2:
            raise ConfigError(f"--seeds {first} must be >= 2 with --until-decided (a paired interval needs 2)")
        max_seeds = args.max_seeds if args.max_seeds is not None else SequentialDesign.max_seeds
        first, max_seeds = cheap.cap(first, cheap.SEQUENTIAL_SEEDS), cheap.cap(max_seeds, cheap.SEQUENTIAL_SEEDS)
        step = args.seeds_per_round if args.seeds_per_round is not None else SequentialDesign.step
        design = SequentialDesign(first=first, step=step, max_seeds=max_seeds)
    default_seeds = comparison.DEFAULT_JOB_SEEDS if default_job else comparison.DEFAULT_SEEDS
    margins = parse_margins(_margin_text(args.margin), DEFAULT_MARGINS)
    spec = comparison.CompareSpec(
        preset=preset,
        strategies=[label for label, _, _ in parsed],
        seeds=design.first if design else cheap.cap(args.seeds or default_seeds, cheap.MAX_SEEDS),
        first_seed=args.first_seed,
        variants={label: (name, opts) for label, name, opts in parsed if label != name or opts},
        overrides=overrides,
        out_dir=Path(args.out) if args.out is not None else Path("runs") / f"compare-{Path(preset).stem}",
        margins={k: m for k, m in margins.items() if DEFAULT_MARGINS[k] != m},
        design=design,
        analysis=args.analysis or (comparison.DEFAULT_JOB_ANALYSIS if default_job else comparison.DEFAULT_ANALYSIS),
        metric=args.metric,
        test=args.test or args.test_file is not None,
        test_file=args.test_file,
        baseline=_baseline(args.baseline, [label for label, _, _ in parsed]),
    )
    return spec, default_job


def _baseline(given: str | None, labels: list[str]) -> str:
    """The baseline label: ``--baseline`` when given (one of ``labels``), else tied."""
    from embtie import comparison
    from embtie.errors import ConfigError

    if given is None:
        return comparison.BASELINE
    if given not in labels:
        raise ConfigError(f"--baseline {given!r} is not among --strategies ({','.join(labels)}); add it there or "
                          "name one of them")  # fmt: skip
    return given


def _check_no_idle_options(args: argparse.Namespace, overrides: list[str]) -> None:
    """Options that would do nothing in the mode asked for are refused, with the reason: the sequential
    design's options without --until-decided, a ``seed=`` override (every run's seed comes from --first-seed
    and its place in the grid)."""
    from embtie.errors import ConfigError

    if args.ladder is None:
        for flag, value in (("--tokens-per-param", args.tokens_per_param), ("--extrapolate", args.extrapolate)):
            if value is not None:
                raise ConfigError(
                    f"{flag} {value} is an option of --ladder; add --ladder KEY=V1,V2,... or leave it out"
                )
    if args.match is None and args.match_tolerance is not None:
        raise ConfigError(f"--match-tolerance {args.match_tolerance:g} is an option of --match; add --match params")
    if not args.until_decided:
        for flag, value in (("--max-seeds", args.max_seeds), ("--seeds-per-round", args.seeds_per_round)):
            if value is not None:
                raise ConfigError(
                    f"{flag} {value} is an option of --until-decided (the rounds of a sequential design); add "
                    f"--until-decided, or give the number of seeds with --seeds"
                )
    for o in overrides:
        if o.split("=", 1)[0].strip() == "seed":
            raise ConfigError(
                f"{o!r} has no effect in a comparison: its runs take the seeds --first-seed, --first-seed + 1, ...; "
                "give --first-seed N instead"
            )


def _margin_text(given: list[str] | None) -> str | None:
    """The --margin options (repeatable, each METRIC=VALUE[%],...) as one list; a metric given twice is
    refused (the last would silently win)."""
    from embtie.errors import ConfigError

    if not given:
        return None
    items = [i.strip() for text in given for i in text.split(",")]
    if not all(items):
        raise ConfigError(f"--margin {','.join(given)!r} has an empty item; write --margin valid_ppl=1%,bleu=0.5")
    keys = [i.partition("=")[0].strip() for i in items]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise ConfigError(f"--margin gives {twice} more than once; keep one margin per metric")
    return ",".join(items)


def _check_before_writing(spec: CompareSpec) -> None:
    """Everything a comparison can be refused for, before it writes anything: every planned config
    (``comparison.plan``), the output folder, and the data each distinct data section trains on."""
    from embtie import comparison, tasks
    from embtie.commands.common import check_out_dir, warn_held_out_copies

    runs = comparison.plan(spec)
    check_out_dir(spec.out_dir)
    checked: list[object] = []
    for r in runs:
        key = (r.cfg.task, r.cfg.data)
        if key not in checked:
            tasks.get(r.cfg.task).check_data(r.cfg)
            warn_held_out_copies(r.cfg.data)
            checked.append(key)


def run(args: argparse.Namespace) -> int:
    from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE
    from embtie.errors import ConfigError
    from embtie.rundir import lock

    spec, default_job = _spec(args)
    launcher = _launcher(args, default_job)
    if args.dry_run and args.report_only:
        raise ConfigError("--dry-run trains nothing and --report-only draws the report; give one of them")
    if args.ladder is not None:
        if default_job:
            raise ConfigError("--ladder needs a preset, e.g. embtie compare ptb-gpt-tiny --ladder size=xs,s,m,l")
        return _ladder(spec, args, launcher)
    if args.match is not None:
        from embtie.ladder import matching

        tolerance = args.match_tolerance if args.match_tolerance is not None else DEFAULT_MATCH_TOLERANCE
        spec = matching.match(spec, args.match, tolerance)
    if args.dry_run:
        return _dry_run(spec, launcher)
    with lock.hold(spec.out_dir, "comparison", lock.command_line()):  # one writer per output folder
        return _compare(spec, args, launcher)


def _dry_run(spec: CompareSpec, launcher: Launcher) -> int:
    """Print the plan (one line per run) and touch nothing."""
    from embtie import comparison

    comparison.plan(spec)  # every config checked (ConfigError) before anything is printed
    rounds = " (the first round of --until-decided)" if spec.design is not None else ""
    lines = launcher.plan_lines(spec)
    print(f"plan: {len(lines)} runs{rounds} with --launcher {launcher.name}; nothing is trained or submitted")
    for line in lines:
        print(line)
    return 0


def _train(spec: CompareSpec, args: argparse.Namespace, launcher: Launcher) -> tuple[CompareSpec, Launched | None]:
    """Train (or, with --report-only, look at) the runs; the spec with the rounds run, and the launch's outcome."""
    from embtie.comparison import rounds

    if spec.design is not None:
        counts = (
            rounds.settled_counts(spec)
            if args.report_only
            else rounds.run_until_decided(spec, progress=not args.no_progress, launcher=launcher)
        )
        return replace(spec, seed_counts=counts), None
    if args.report_only:
        return spec, None
    return spec, launcher.launch(spec, progress=not args.no_progress)


def _unfinished(launched: Launched | None, finished: int) -> int:
    """Say what is left of a launch (failed runs and their logs, runs in flight); the exit status."""
    import sys

    if launched is None or launched.complete:
        return 0
    for f in launched.failed:
        print(f"embtie compare: error: {f.describe()}", file=sys.stderr)
    left = []
    if launched.failed:
        left.append(f"{len(launched.failed)} failed (run the same command again to resubmit them; they resume)")
    if launched.in_flight:
        left.append(f"{len(launched.in_flight)} still queued or running (run the same command again to collect them)")
    print(f"{finished} of {len(launched.runs)} runs finished; " + "; ".join(left))
    return 1 if launched.failed else 0


def _compare(spec: CompareSpec, args: argparse.Namespace, launcher: Launcher) -> int:
    from embtie import comparison
    from embtie.reporting import comparison_report, document

    out = spec.out_dir
    t0 = time.perf_counter()
    if not args.report_only:
        _check_before_writing(spec)
        _fix_design(spec)
    spec, launched = _train(spec, args, launcher)
    runs = comparison.finished_runs(comparison.plan(spec))
    if not runs and launched is not None:
        return _unfinished(launched, 0)  # nothing to report yet
    if spec.test:  # after every look: the test split never decides anything
        from embtie.comparison import held_out

        held_out.evaluate_all(runs, spec.test_file, progress=not args.no_progress)
    results = comparison.collect(spec, runs)
    csv_path, json_path = comparison.write_tables(results, out)
    report = comparison_report.build(results, out)
    if spec.matching is not None:  # how the arms were matched, first: every figure below depends on it
        from embtie.reporting.sections.matching import matching_blocks

        report.blocks[0:0] = matching_blocks(spec.matching)
    md, page = document.write(report, out)
    seeds = "/".join(str(spec.seeds_of(s)) for s in spec.strategies) if spec.seed_counts else str(spec.seeds)
    print(f"compared {len(spec.strategies)} strategies x {seeds} seeds in {time.perf_counter() - t0:.0f} s")
    for line in comparison_report.verdict_lines(results, out):
        print(f"  {line}")
    print(f"report: {page.resolve()}")
    print(f"        {md.resolve()}")
    print(f"tables: {csv_path.resolve()}, {json_path.resolve()}")
    for line in comparison_report.choice_lines(results, out):  # the answer last: which strategy to use
        print(line.replace("`", ""))
    return _unfinished(launched, len(runs))


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


def _ladder(spec: CompareSpec, args: argparse.Namespace, launcher: Launcher) -> int:
    """--ladder: the comparison at every rung (each in DIR/rungs/<rung>, resumable), then the ladder's report."""
    from embtie import comparison
    from embtie.commands.common import check_out_dir
    from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE
    from embtie.ladder import driver
    from embtie.ladder import spec as ladder_spec
    from embtie.rundir import lock

    if args.out is None:
        spec = replace(spec, out_dir=Path("runs") / f"ladder-{Path(spec.preset).stem}")
    ratio = args.tokens_per_param if args.tokens_per_param is not None else ladder_spec.DEFAULT_TOKENS_PER_PARAM
    ladder = ladder_spec.parse(args.ladder, ratio, args.extrapolate)
    tolerance = args.match_tolerance if args.match_tolerance is not None else DEFAULT_MATCH_TOLERANCE
    plan = driver.plan_ladder(spec, ladder, args.match, tolerance)
    rungs = list(zip(plan.budgets, plan.specs))
    if args.dry_run:
        for i, (b, rung) in enumerate(rungs, 1):
            print(f"ladder rung {i}/{len(rungs)} {b.rung.value}: {b.body:,} body parameters, {b.steps:,} steps")
            _dry_run(rung, launcher)
        return 0
    check_out_dir(spec.out_dir)
    status = 0
    with lock.hold(spec.out_dir, "ladder", lock.command_line()):
        for i, (b, rung) in enumerate(rungs, 1):
            print(f"ladder rung {i}/{len(rungs)} {b.rung.value}: {b.body:,} body parameters, {b.steps:,} steps")
            if args.report_only and not comparison.finished_runs(comparison.plan(rung)):
                continue
            with lock.hold(rung.out_dir, "comparison", lock.command_line()):
                status = max(status, _compare(rung, args, launcher))
        _ladder_report(plan)
    return status


def _ladder_report(plan: LadderPlan) -> None:
    """Collect the finished rungs, write DIR/ladder.json and the ladder's report, print the trends."""
    import json

    from embtie.ladder import driver
    from embtie.reporting import document, ladder_report

    out = plan.base.out_dir
    results = driver.results(plan)
    (out / "ladder.json").write_text(json.dumps(results.to_json(), indent=2) + "\n", encoding="utf-8")
    md, page = document.write(ladder_report.build(results, out), out)
    unit = results.metric.unit if results.metric is not None else ""
    for s in plan.base.strategies:
        t = results.trend(s) if s != results.baseline else None
        if t is not None:
            lo, hi = t.slope_interval()
            print(f"  {s}: {t.slope:+.2f}{unit} per tenfold body [{lo:+.2f}, {hi:+.2f}] over {t.n} rungs")
    print(f"ladder report: {page.resolve()}")
    print(f"               {md.resolve()}")
