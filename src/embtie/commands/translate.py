"""``embtie translate RUN_DIR [--beam 5] [--lenpen 1.0] < src > hyp``: translate text with a trained run."""

from __future__ import annotations

import argparse

from embtie.commands.common import device_arg, number_arg, path_arg, read_stdin_lines
from embtie.rundir.folders import read_run_config

HELP = "translate sentences (one per line, stdin or --input) with a trained translation run"
DESCRIPTION = HELP
EXAMPLES = ("echo 'Ein Hund rennt über das Gras .' | embtie translate runs/tf --beam 5",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=path_arg("RUN_DIR"), metavar="RUN_DIR")
    parser.add_argument(
        "--beam",
        type=number_arg(int, "--beam", ge=1, most=1000),
        default=None,
        help="beam width (1: greedy; default: the run's data.beam)",
    )
    parser.add_argument(
        "--lenpen",
        type=number_arg(float, "--lenpen", ge=0, most=100),
        default=None,
        help="length penalty (default: the run's data.lenpen)",
    )
    parser.add_argument("--input", type=path_arg("--input"), metavar="PATH", help="source file (default: stdin)")
    parser.add_argument("--checkpoint", metavar="NAME", help="e.g. avg-last5 (from `embtie average`); default: newest")
    parser.add_argument("--device", default="cpu", type=device_arg, help="cpu (default), cuda or cuda:N")


def run(args: argparse.Namespace) -> int:
    from embtie import tasks
    from embtie.data.files import read_user_lines
    from embtie.errors import ConfigError, DataError
    from embtie.rundir.loading import load_for_decoding
    from embtie.tasks.capabilities import Translates

    cfg = read_run_config(args.run_dir)
    if not issubclass(tasks.get(cfg.task), Translates):
        raise ConfigError(f"{args.run_dir} is a {cfg.task!r} run, not a translation run")
    # the input is read (and checked) before the model is loaded
    if args.input:
        lines = read_user_lines(args.input, "--input")
    else:
        lines = read_stdin_lines("stdin")
        if not lines:
            raise DataError("no input: stdin is empty; pipe sentences in (one per line) or give --input PATH")
    run_ = load_for_decoding(args.run_dir, args.checkpoint, args.device)
    assert isinstance(run_.task, Translates)  # the run's task class was checked above
    for hyp in run_.task.translate(run_.model, lines, beam=args.beam, lenpen=args.lenpen):
        print(hyp)
    return 0
