"""``embtie strategies``: every registered strategy with its formula and source."""

from __future__ import annotations

import argparse

HELP = "list every sharing strategy with its formula and the paper it comes from"
DESCRIPTION = HELP
EXAMPLES = (
    "embtie strategies",
    "embtie strategies --options",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--options", action="store_true", help="also list the options each strategy accepts")


def run(args: argparse.Namespace) -> int:
    from embtie import sharing

    width = max(len(n) for n in sharing.names())
    for name in sharing.names():
        cls = sharing.get(name)
        print(f"{name:<{width}}  {cls.formula}   [{cls.source}]")
        if args.options:
            print(f"{'':<{width}}  options: {', '.join(sharing.accepted_options(name))}")
    return 0
