"""The ``embtie`` command: one entry point, one module per subcommand under ``embtie.commands``.

Each subcommand module defines ``HELP`` (one line), ``DESCRIPTION`` (its --help text), ``add_arguments(parser)``
and ``run(args) -> int``, and ``EXAMPLES``: full command lines printed under "examples:" at the
end of its --help, as written (the test suite runs every one of them with ``EMBTIE_CHEAP=1``:
tests/docs/test_docs_run.py).
Errors derived from ``EmbtieError`` (bad options, missing data), files that cannot be read or written
(``OSError``) and command-line mistakes print as one line ``embtie CMD: error: ...``, exit status 2;
any other exception prints one line too (exit status 1), naming ``--debug``, which re-raises it with
its traceback (``embtie --debug CMD ...`` or ``embtie CMD ... --debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import importlib
import os
import re
import sys
import types
import typing
from collections.abc import Iterator

from embtie import __version__
from embtie.errors import EmbtieError

# subcommand name -> module under embtie.commands
COMMANDS: dict[str, str] = {
    "strategies": "strategies",
    "theory": "theory",
    "train": "train",
    "eval": "evaluate",
    "translate": "translate",
    "caption": "caption",
    "prepare-captions": "prepare_captions",
    "average": "average",
    "compare": "compare",
    "confirm": "confirm",
    "analyze": "analyze",
    "hf-compare": "hf_compare",
    "export": "export",
    "hf-audit": "hf_audit",
    "data": "data",
    "config": "config",
    "plan": "plan",
}


def _load(module: str) -> types.ModuleType:
    """The module of a subcommand (``embtie.commands.MODULE``), imported when the command line needs it."""
    return importlib.import_module(f"embtie.commands.{module}")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``embtie train: error: ...; see `embtie train --help` `` (no usage block),
    and a "did you mean" for a mistyped command or choice."""

    def error(self, message: str) -> typing.NoReturn:
        message = _drop_repeated_name(message)
        self.exit(2, f"{self.prog}: error: {message}{_did_you_mean(message)}; see `{self.prog} --help`\n")


def _drop_repeated_name(message: str) -> str:
    """``argument --jobs: --jobs 0 must be >= 1`` -> ``--jobs 0 must be >= 1`` (the checks of
    ``embtie.commands.common`` name the argument themselves)."""
    m = re.match(r"argument (\S+): ", message)
    if m and any(message[m.end() :].startswith(f"{name} ") for name in m.group(1).split("/")):
        return message[m.end() :]
    return message


def _did_you_mean(message: str) -> str:
    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not m:
        return ""
    choices = re.findall(r"'([^']*)'", m.group(2)) or [c.strip() for c in m.group(2).split(",")]
    close = difflib.get_close_matches(m.group(1), choices, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


ENVIRONMENT = """environment:
  EMBTIE_DATA=DIR   the data root (ptb/, wikitext-2/, multi30k/, ...; default ../shared/data)
  EMBTIE_CACHE=DIR  subword models and image features (default ~/.cache/embtie)
  EMBTIE_QUIET=1    no progress bars
  EMBTIE_CHEAP=1    run any command as a smoke test: every run trains 3 steps on tiny slices of the
                    data; compare trains one seed (2 with --until-decided) one run at a time,
                    hf-compare likewise, theory a small sample (what the documentation tests use;
                    the numbers it prints mean nothing)"""


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that a text block starting with ``examples:`` or ``environment:``
    keeps its lines as written (commands must not be re-wrapped)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = text.split("\n\n")
        return "\n\n".join(
            b
            if b.startswith(("examples:", "environment:"))
            else super(_HelpFormatter, self)._fill_text(b, width, indent)
            for b in blocks
        )


def examples_epilog(examples: tuple[str, ...]) -> str | None:
    """The "examples:" block of a subcommand's --help (None when it has none)."""
    return "examples:\n" + "\n".join(f"  {e}" for e in examples) if examples else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``embtie`` parser. ``only``: the one subcommand whose options are built (its module's
    ``add_arguments`` may import the heavy parts of embtie); every other subcommand gets its name and
    one-line help only, so that ``embtie --help``, ``--version`` and ``data list`` start without torch.
    None builds every subcommand in full (tests, documentation)."""
    parser = _Parser(
        prog="embtie",
        description="Input/output embedding sharing strategies for text-generation models: "
        "build, train, evaluate and compare them.",
        epilog=ENVIRONMENT,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"embtie {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (they are off anyway when stderr "
                        "is not a terminal)")  # fmt: skip
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = _load(module)
        if only is not None and name != only:
            sub.add_parser(name, help=mod.HELP)
            continue
        p = sub.add_parser(
            name,
            help=mod.HELP,
            description=mod.DESCRIPTION,
            epilog=examples_epilog(mod.EXAMPLES),
            formatter_class=_HelpFormatter,
        )
        mod.add_arguments(p)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback")
        p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bars")
        p.set_defaults(_run=mod.run)
    return parser


def _os_error(e: OSError) -> str:
    """One line for a file or folder that could not be read or written, with the likely fix."""
    where = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
    what = e.strerror or str(e)
    hint = {
        errno.EACCES: "check its permissions (to write: choose a folder you can write to)",
        errno.EPERM: "check its permissions (to write: choose a folder you can write to)",
        errno.EROFS: "the file system is read-only; choose another folder",
        errno.ENOSPC: "the disk is full; free some space",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.EISDIR: "give a file, not a folder",
        errno.ENOENT: "check the path",
    }.get(e.errno or 0)
    text = f"{what}: {where}" if where else what
    cache = _cache_holding(e.filename)
    if cache is not None and e.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC):
        setting = "EMBTIE_CACHE" if os.environ.get("EMBTIE_CACHE") else "EMBTIE_CACHE (unset: the default)"
        hint = f"it is embtie's cache {cache}, set by {setting}: point EMBTIE_CACHE at a folder you can write to"
    return f"{text}; {hint}" if hint else text


def _cache_holding(filename: object) -> str | None:
    """The cache folder (``$EMBTIE_CACHE`` or its default) that holds ``filename``, or None."""
    if not isinstance(filename, str | os.PathLike):
        return None
    from pathlib import Path

    from embtie.data.files import user_data_cache
    from embtie.data.subwords import cache_root

    path = Path(filename).expanduser().absolute()
    for root in {cache_root().absolute(), user_data_cache().parent.absolute()}:
        if path == root or root in path.parents:
            return str(root)
    return None


def _chosen(argv: list[str]) -> str:
    """The subcommand ``argv`` names (its first word that is one), or "" when it names none."""
    return next((word for word in argv if word in COMMANDS), "")


def _given_twice(words: object) -> list[str]:
    """Notes for each config key given more than once among a command's ``key=value`` words: the last
    value is used (scripts build commands by appending, so this is a note, not a refusal)."""
    if not isinstance(words, list):
        return []
    values: dict[str, list[str]] = {}
    for word in words:
        if isinstance(word, str) and "=" in word and not word.startswith("-"):
            key, value = word.split("=", 1)
            values.setdefault(key.strip(), []).append(value.strip())
    return [
        f"{key} is given {len(given)} times ({', then '.join(given)}); the last, {given[-1]}, is used"
        for key, given in values.items()
        if len(given) > 1 and len(set(given)) > 1
    ]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(_chosen(sys.argv[1:] if argv is None else argv))
    try:
        args, extra = parser.parse_known_args(argv)
    except SystemExit as e:  # argparse has printed its one line; --help (status 0) exits as it did
        if not e.code:
            raise
        return e.code if isinstance(e.code, int) else 2
    # Positional words may also come after options (`embtie train PRESET --out DIR lr=0.1`): argparse
    # fills a nargs='*' positional only once, so leftover words extend the command's list positional
    # (``overrides`` or ``args``); the command validates them.
    if extra:
        target = next((a for a in ("overrides", "args") if isinstance(getattr(args, a, None), list)), None)
        if target is None or any(a.startswith("-") for a in extra):
            command = getattr(args, "command", None)  # foreign: argparse's Namespace
            sub = f"embtie {command}" if command else "embtie"
            parser.exit(2, f"{sub}: error: unrecognized arguments: {' '.join(extra)}; see `{sub} --help`\n")
        getattr(args, target).extend(extra)
    words = getattr(args, "overrides", None), getattr(args, "args", None)  # foreign: argparse's Namespace
    for note in _given_twice(words[0]) + _given_twice(words[1]):
        print(f"embtie {getattr(args, 'command', '')}: note: {note}", file=sys.stderr)  # foreign: argparse's Namespace
    if not getattr(args, "_run", None):  # foreign: argparse's Namespace
        parser.print_help()
        print(f"embtie: error: no command given; choose one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    debug = bool(getattr(args, "debug", False))  # foreign: argparse's Namespace
    prefix = f"embtie {args.command}"
    with _quiet(bool(getattr(args, "quiet", False))):  # foreign: argparse's Namespace
        return _run(args, prefix, debug)


@contextlib.contextmanager
def _quiet(enabled: bool) -> Iterator[None]:
    """``--quiet``: progress bars off for this command (``embtie.progress.QUIET_ENV``), restored after
    (embtie.progress, and tqdm with it, imported only then: commands that show no bar start faster)."""
    if not enabled:
        yield
        return
    from embtie.progress import QUIET_ENV

    old = os.environ.get(QUIET_ENV)
    os.environ[QUIET_ENV] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ[QUIET_ENV]
        else:
            os.environ[QUIET_ENV] = old


def _run(args: argparse.Namespace, prefix: str, debug: bool) -> int:
    """Run the chosen command, turning its errors into one line on stderr (tracebacks with --debug)."""
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe (`| head`) shows up here, not at interpreter exit
        return code
    except KeyboardInterrupt:
        print(f"{prefix}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except EmbtieError as e:
        if debug:
            raise
        print(f"{prefix}: error: {_one_line(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:
        if debug:
            raise
        print(f"{prefix}: error: {_one_line(_os_error(e))}", file=sys.stderr)
        return 2
    except Exception as e:
        if debug:
            raise
        print(
            f"{prefix}: error: unexpected {type(e).__name__}: {_one_line(str(e))} "
            f"(run `embtie --debug {args.command} ...` for the traceback, and please report it)",
            file=sys.stderr,
        )
        return 1


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip()) or "(no message)"


def entry() -> typing.NoReturn:
    """The ``embtie`` command and ``python -m embtie``: ``main`` then ``shutdown.exit_process`` (which skips
    the interpreter's shutdown in a torchrun worker)."""
    from embtie.shutdown import exit_process

    exit_process(main())


if __name__ == "__main__":
    entry()
