"""The ``embtie`` command: one entry point, one module per subcommand under ``embtie.commands``.

Each subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Errors derived from ``EmbtieError`` (bad options, missing data) print as one line, exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from embtie.errors import EmbtieError

# subcommand name -> module under embtie.commands
COMMANDS: dict[str, str] = {
    "strategies": "strategies",
    "theory": "theory",
    "train": "train",
    "eval": "evaluate",
    "translate": "translate",
    "average": "average",
    "compare": "compare",
    "analyze": "analyze",
    "hf-compare": "hf_compare",
}


def _load(module: str):
    try:
        return importlib.import_module(f"embtie.commands.{module}")
    except ModuleNotFoundError as e:
        if e.name == f"embtie.commands.{module}":
            return None  # subcommand not built yet
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="embtie",
        description="Input/output embedding sharing strategies for text-generation models: "
        "build, train, evaluate and compare them.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = _load(module)
        if mod is None:
            continue
        p = sub.add_parser(name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # Positional words may also come after options (`embtie train PRESET --out DIR lr=0.1`): argparse
    # fills a nargs='*' positional only once, so leftover words extend the command's list positional
    # (``overrides`` or ``args``); the command validates them.
    if extra:
        target = next((a for a in ("overrides", "args") if isinstance(getattr(args, a, None), list)), None)
        if target is None or any(a.startswith("-") for a in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        getattr(args, target).extend(extra)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 1
    try:
        return int(args._run(args) or 0)
    except EmbtieError as e:
        print(f"embtie {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"embtie {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
