"""``embtie confirm ORIGINAL --out FRESH``: re-run a finished comparison's design on fresh seeds on this
machine, then say per verdict whether the fresh seeds confirm it; ``--report-only`` reports from folders
already run (``embtie.comparison.confirmation`` reads the design, ``confirmation_report`` decides)."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from embtie.commands.common import number_arg, path_arg

HELP = "re-run a finished comparison's design on fresh seeds and say which verdicts they confirm"
DESCRIPTION = (
    "Reads the design of the comparison in ORIGINAL (its design.json, or for an older folder its "
    "results.json command and overrides: the strategies, baseline, metric, margins, looks and overrides), "
    "re-runs it with `embtie compare` on fresh seeds (by default the first seed past every seed the original "
    "used) into --out on the machine at hand, then prints per strategy the original verdict, the fresh one and "
    "whether it is confirmed, contradicted or undecided, and a verdict pooled over the fresh folders with each "
    "folder's machine (CPU model and kernel path, or GPU) as a block (--pool-original: ORIGINAL's pairs too). With "
    "--report-only nothing is trained: the FRESH folders given are reported (each the same design as ORIGINAL, "
    "or a subset of its strategies that keeps its baseline)."
)
EXAMPLES = (
    "embtie compare ptb-gpt-tiny --strategies tied,untied --seeds 2 --out runs/base train.max_steps=50",
    "embtie confirm runs/base --out runs/base-fresh",
    "embtie confirm runs/base runs/base-fresh --report-only",
    "embtie confirm runs/base runs/base-fresh --report-only --pool-original",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("original", type=path_arg("ORIGINAL", "runs/cmp"), metavar="ORIGINAL",
                        help="the --out folder of a finished `embtie compare`")  # fmt: skip
    parser.add_argument("fresh", nargs="*", type=path_arg("FRESH", "runs/cmp-fresh"), metavar="FRESH",
                        help="with --report-only: folders of the same design re-run on fresh seeds")  # fmt: skip
    parser.add_argument("--out", type=path_arg("--out", "runs/cmp-fresh"), default=None,
                        help="the folder the fresh runs go to (a new folder, or one this command started)")  # fmt: skip
    parser.add_argument("--first-seed", type=number_arg(int, "--first-seed", ge=0), default=None,
                        help="the first fresh seed (default: past every seed the original used)")  # fmt: skip
    parser.add_argument("--seeds", type=number_arg(int, "--seeds", ge=2, most=10_000), default=None,
                        help="the first (or only) look's seeds, instead of the original's")  # fmt: skip
    parser.add_argument(
        "--until-decided",
        action="store_true",
        help="with --seeds: looks at --seeds, then --seeds-per-round more, up to --max-seeds",
    )
    parser.add_argument("--max-seeds", type=number_arg(int, "--max-seeds", ge=2, most=10_000), default=None)
    parser.add_argument("--seeds-per-round", type=number_arg(int, "--seeds-per-round", ge=1, most=10_000),
                        default=None)  # fmt: skip
    parser.add_argument("--jobs", type=number_arg(int, "--jobs", ge=1, most=1024), default=1,
                        help="runs trained at once (default 1)")  # fmt: skip
    parser.add_argument("--report-only", action="store_true", help="train nothing: report ORIGINAL against FRESH")
    parser.add_argument("--pool-original", action="store_true",
                        help="count ORIGINAL's pairs as one more block of the pooled verdict (its machine as its "
                             "runs recorded it); the pooled verdict then covers every machine measured")  # fmt: skip
    parser.add_argument("--write", type=path_arg("--write", "confirmation.md"), default=None,
                        help="also write the confirmation table to this Markdown file")  # fmt: skip


def _looks(args: argparse.Namespace, original: tuple[int, ...]) -> tuple[int, ...]:
    from embtie.comparison.confirmation import looks_of
    from embtie.errors import ConfigError

    if args.seeds is None:
        if args.until_decided or args.max_seeds is not None or args.seeds_per_round is not None:
            raise ConfigError("--until-decided, --max-seeds and --seeds-per-round need --seeds (the first look)")
        return original
    if args.max_seeds is not None and args.max_seeds < args.seeds:
        raise ConfigError(f"--max-seeds {args.max_seeds} must be >= --seeds {args.seeds}")
    return looks_of(args.seeds, args.until_decided, args.max_seeds, args.seeds_per_round)


def _fresh_folders(args: argparse.Namespace) -> list[Path]:
    """The folders to report: the FRESH ones with --report-only, else --out after running the design there."""
    from embtie.comparison.confirmation import read_original
    from embtie.errors import ConfigError

    original = read_original(Path(args.original))
    if args.report_only:
        if not args.fresh:
            raise ConfigError("--report-only needs the FRESH folders to report, e.g. "
                              f"`embtie confirm {args.original} runs/cmp-fresh --report-only`")  # fmt: skip
        return [Path(f) for f in args.fresh]
    if args.fresh:
        raise ConfigError(f"FRESH folders ({' '.join(args.fresh)}) are read only with --report-only; to run, "
                          f"give one --out")  # fmt: skip
    if args.out is None:
        raise ConfigError(f"give --out, the folder the fresh runs go to, e.g. `embtie confirm {args.original} "
                          f"--out {args.original.rstrip('/')}-fresh`")  # fmt: skip
    first = original.next_seed if args.first_seed is None else args.first_seed
    reused = sorted(set(original.seeds_used) & set(range(first, first + _looks(args, original.looks)[-1])))
    if reused:
        raise ConfigError(f"--first-seed {first} would re-use seeds the original used ({reused[0]}...{reused[-1]}); "
                          f"give --first-seed {original.next_seed} or higher")  # fmt: skip
    command = [sys.executable, "-m", "embtie", "compare",
               *original.compare_args(Path(args.out), first, _looks(args, original.looks), args.jobs)]  # fmt: skip
    print(f"re-running {args.original} (design read from its {original.source}) on seeds from {first}:\n"
          f"  embtie {shlex.join(command[3:])}", flush=True)  # fmt: skip
    done = subprocess.run(command, check=False)
    if done.returncode != 0:
        raise ConfigError(f"`embtie compare` stopped with status {done.returncode} (its message is above); "
                          f"run the same `embtie confirm` again to resume")  # fmt: skip
    return [Path(args.out)]


def run(args: argparse.Namespace) -> int:
    from embtie.comparison.confirmation_report import confirmation_report

    fresh = _fresh_folders(args)
    text = confirmation_report(Path(args.original), fresh, pool_original=args.pool_original)
    print(text)
    if args.write is not None:
        Path(args.write).write_text(text, encoding="utf-8")
    return 0
