"""``embtie config``: the configuration reference, every key with its type, default, allowed values and meaning."""

from __future__ import annotations

import argparse
from collections.abc import Callable

HELP = "every config key and strategy option: type, default, allowed values, meaning"
DESCRIPTION = (
    "Print the configuration reference: every key of a run config (task, seed, data.* of each task, model.* of "
    "each model, sharing.name, sharing.options.* of each strategy, train.*) with its type, default, allowed "
    "values and one line of meaning, read from the declarations that validate them. --task, --model and "
    "--strategy keep only that task's data keys, that model's keys and that strategy's own options; "
    "--markdown prints Markdown (docs/configuration.md is `embtie config --markdown`)."
)
EXAMPLES = (
    "embtie config --strategy fixed",
    "embtie config --task lm --model gpt",
    "embtie config --markdown > configuration.md",
)


def _name_arg(flag: str, what: str, names: Callable[[], list[str]]) -> Callable[[str], str]:
    """argparse ``type=`` for a registered name (the registry is read when the argument is)."""

    def read(text: str) -> str:
        from embtie.schema import did_you_mean

        valid = names()
        if text not in valid:
            raise argparse.ArgumentTypeError(
                f"{flag} {text!r} is not a {what}{did_you_mean(text, valid)}; choose one of: {', '.join(valid)}"
            )
        return text

    read.__name__ = what
    return read


def _tasks() -> list[str]:
    from embtie.config import task_sections

    return sorted(task_sections())


def _models() -> list[str]:
    from embtie import models

    return models.names()


def _strategies() -> list[str]:
    from embtie import sharing

    return sharing.names()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", type=_name_arg("--task", "task", _tasks), help="only this task's data keys")
    parser.add_argument("--model", type=_name_arg("--model", "model", _models), help="only this model's keys")
    parser.add_argument(
        "--strategy", type=_name_arg("--strategy", "strategy", _strategies), help="only this strategy's own options"
    )
    parser.add_argument("--markdown", action="store_true", help="print Markdown (the text of docs/configuration.md)")


def run(args: argparse.Namespace) -> int:
    from embtie.config import reference

    tables = reference.tables(task=args.task, model=args.model, strategy=args.strategy)
    print(reference.markdown(tables) if args.markdown else reference.text(tables), end="")
    return 0
