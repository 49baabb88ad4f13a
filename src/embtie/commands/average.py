"""``embtie average RUN_DIR --last N``: average the last N checkpoints (fp32; tied tensors stay tied)."""

from __future__ import annotations

import argparse

HELP = "average the weights of a run's last N checkpoints into checkpoints/avg-lastN"
DESCRIPTION = HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR")
    parser.add_argument("--last", type=int, required=True, metavar="N")


def run(args: argparse.Namespace) -> int:
    from embtie.rundir.averaging import average_checkpoints

    out = average_checkpoints(args.run_dir, args.last)
    print(f"averaged the last {args.last} checkpoints into {out} (use --checkpoint {out.name})")
    return 0
