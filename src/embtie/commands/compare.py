"""``embtie compare``: train a grid of strategies x seeds and write a report with statistics and diagnostics (the
options become an ``embtie.experiment.ComparisonRequest``, run by ``run_comparison`` or ``run_ladder``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from embtie.comparison.launchers import Launcher
    from embtie.experiment import ComparisonRequest

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
    from embtie.commands.common import path_arg
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
        "'all' = every registered strategy, as embtie strategies lists them). A variant with options gets a label: "
        "LABEL=NAME:key=value:key=value, e.g. adaptive-l2norm=adaptive:within=l2norm; a dotted key is a config "
        "override of that arm alone, e.g. untied-lr2=untied:train.lr=0.002",
    )
    parser.add_argument(
        "--seeds",
        type=_number("seeds"),
        default=None,
        help=f"seeds per strategy (default {comparison.DEFAULT_SEEDS}; the default job: "
        f"{comparison.DEFAULT_JOB_SEEDS})",
    )
    parser.add_argument(
        "--first-seed",
        type=_number("first_seed"),
        default=0,
        help="seeds are FIRST, FIRST+1, ... (default 0); another base seed checks that the verdicts are stable",
    )
    parser.add_argument(
        "--out", type=path_arg("--out"), default=None, help="output folder (default runs/compare-<preset>)"
    )
    parser.add_argument(
        "--jobs",
        type=_number("jobs"),
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
        type=_number("max_seeds"),
        default=None,
        help=f"the last look of --until-decided, at least --seeds (default {SequentialDesign.max_seeds})",
    )
    parser.add_argument(
        "--seeds-per-round",
        type=_number("seeds_per_round"),
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


def _number(field: str) -> Callable[[str], Any]:
    """The argparse type of a number option: its limits are ``embtie.experiment.request.NUMBERS``'s."""
    from embtie.commands.common import number_arg
    from embtie.experiment.request import NUMBERS

    flag, tp, limits = NUMBERS[field]
    return number_arg(tp, flag, **limits)


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
        type=_number("tokens_per_param"),
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
        type=_number("match_tolerance"),
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


def _launcher(args: argparse.Namespace) -> Launcher | None:
    """The Slurm launcher the options ask for, or None for this machine (a ConfigError when they do not fit
    together)."""
    from embtie.comparison.launchers import SlurmLauncher, SlurmResources, slurm, slurm_resources
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
        return None
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


def request_of(args: argparse.Namespace) -> ComparisonRequest:
    """The ``embtie.experiment.ComparisonRequest`` the command line stands for."""
    from embtie.commands.common import split_preset
    from embtie.experiment import ComparisonRequest

    preset, overrides = split_preset(args.args)
    return ComparisonRequest(
        preset=preset,
        overrides=overrides,
        strategies=args.strategies,
        seeds=args.seeds,
        first_seed=args.first_seed,
        out=args.out,
        jobs=args.jobs,
        launcher=_launcher(args),
        margins=args.margin,
        until_decided=args.until_decided,
        max_seeds=args.max_seeds,
        seeds_per_round=args.seeds_per_round,
        analysis=args.analysis,
        metric=args.metric,
        test=args.test,
        test_file=args.test_file,
        baseline=args.baseline,
        ladder=args.ladder,
        tokens_per_param=args.tokens_per_param,
        extrapolate=args.extrapolate,
        match=args.match,
        match_tolerance=args.match_tolerance,
        dry_run=args.dry_run,
        report_only=args.report_only,
        progress=not args.no_progress,
    )


def run(args: argparse.Namespace) -> int:
    from embtie.experiment import run_comparison, run_ladder

    request = request_of(args)
    if request.ladder is not None:
        return run_ladder(request).status
    return run_comparison(request).status
