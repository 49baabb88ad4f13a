"""``embtie average RUN_DIR --last N``: average the last N checkpoints (fp32; tied tensors stay tied)."""

from __future__ import annotations

import argparse

from embtie.commands.common import number_arg, path_arg

HELP = "average the weights of a run's last N checkpoints into checkpoints/avg-lastN"
DESCRIPTION = HELP
EXAMPLES = (
    "embtie average runs/tf --last 3",
    "embtie eval runs/tf --checkpoint avg-last3",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=path_arg("RUN_DIR"), metavar="RUN_DIR")
    parser.add_argument(
        "--last",
        type=number_arg(int, "--last", ge=1, most=10_000),
        required=True,
        metavar="N",
        help="how many checkpoints",
    )


def run(args: argparse.Namespace) -> int:
    from embtie.rundir.averaging import average_checkpoints

    out = average_checkpoints(args.run_dir, args.last)
    print(f"averaged the last {args.last} checkpoints into {out} (use --checkpoint {out.name})")
    return 0
