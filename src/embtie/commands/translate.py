"""``embtie translate RUN_DIR [--beam 5] [--lenpen 1.0] < src > hyp``: translate text with a trained run."""

from __future__ import annotations

import argparse
import sys

HELP = "translate sentences (one per line, stdin or --input) with a trained translation run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR")
    parser.add_argument("--beam", type=int, default=None, help="beam width (1: greedy; default: the run's data.beam)")
    parser.add_argument("--lenpen", type=float, default=None, help="length penalty (default: the run's data.lenpen)")
    parser.add_argument("--input", metavar="PATH", help="source file (default: stdin)")
    parser.add_argument("--checkpoint", metavar="NAME", help="e.g. avg-last5 (from `embtie average`); default: newest")
    parser.add_argument("--device", default="cpu")


def run(args: argparse.Namespace) -> int:
    from embtie.data.files import read_lines, user_file
    from embtie.errors import ConfigError
    from embtie.runs import load_for_decoding

    run_ = load_for_decoding(args.run_dir, args.checkpoint, args.device)
    if not hasattr(run_.task, "translate"):
        raise ConfigError(f"{args.run_dir} is a {run_.config.task!r} run, not a translation run")
    if args.input:
        lines = read_lines(user_file(args.input, "--input"))
    else:
        lines = [line.rstrip("\r\n") for line in sys.stdin]
    for hyp in run_.task.translate(run_.model, lines, beam=args.beam, lenpen=args.lenpen):
        print(hyp)
    return 0
