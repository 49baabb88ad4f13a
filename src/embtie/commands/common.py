"""Checks shared by the subcommands: numbers and paths on the command line, a ``--device`` argument, text
on stdin (the ``--out`` folder and a run's config: ``embtie.rundir.folders``).

Every argument is checked where argparse reads it (its ``type=``), so that a refused command has done
nothing yet: ``number_arg(int, "--seeds", ge=1)`` reads a number as everywhere else
(``embtie.schema.parse_number``: ``1e4``, ``1_000``, ``.5``) and checks it against the limits of an
``embtie.schema.Setting`` (one line: ``--seeds 0 must be >= 1``); ``path_arg("--out")`` refuses an empty path.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from embtie.errors import ConfigError, EmbtieError
from embtie.schema import Setting, check, parse_number, shown


def number_arg(
    tp: type[int] | type[float], flag: str, most: float | None = None, **limits: Any
) -> Callable[[str], Any]:
    """argparse ``type=`` for a number of type ``tp`` within ``limits`` (``ge=1``, ``gt=0``, ...: the fields
    of ``embtie.schema.Setting``) and at most ``most`` (the largest value a machine honours: a count past it is
    refused before any work starts); an error names the flag, the value and the range."""
    spec = Setting(**limits)

    def read(text: str) -> Any:
        number = parse_number(text)
        if most is not None and number is not None and math.isfinite(number) and number > most:
            value = int(number) if tp is int and float(number).is_integer() else number
            raise argparse.ArgumentTypeError(f"{shown(flag, value)} is too large: give at most {most:,}")
        try:
            return check(text, tp, flag, spec)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    read.__name__ = tp.__name__  # argparse names the type in its own messages
    return read


def path_arg(flag: str, example: str = "runs/my-run") -> Callable[[str], str]:
    """argparse ``type=`` for a file or folder path (or a URL): an empty one (``--out ''``, which would mean the
    current folder) is refused, naming ``example``."""

    def read(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{flag} {text!r} is empty; give a path, e.g. {flag} {example}")
        return text

    read.__name__ = "path"
    return read


def device_arg(text: str) -> str:
    """argparse ``type=`` for ``--device``: cpu, cuda or cuda:N that exists on this machine."""
    import torch

    try:
        dev = torch.device(text)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device; use cpu, cuda or cuda:N") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise argparse.ArgumentTypeError(f"{text!r}: no CUDA GPU is available here; use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise argparse.ArgumentTypeError(
                f"{text!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s), numbered from 0"
            )
    elif dev.type != "cpu":
        raise argparse.ArgumentTypeError(f"{text!r} is not supported; use cpu, cuda or cuda:N")
    return text


def read_stdin_lines(what: str = "stdin") -> list[str]:
    """The lines of stdin, decoded as UTF-8 (a DataError naming the line otherwise), without line endings."""
    stream = getattr(sys.stdin, "buffer", None)  # foreign: sys.stdin
    if stream is None:  # a text stream without bytes underneath (e.g. io.StringIO)
        return [line.rstrip("\r\n") for line in sys.stdin]
    from embtie.data.files import decode_utf8

    text = decode_utf8(stream.read(), what)
    lines = text.split("\n")  # only newlines end a sentence (not form feeds or U+2028 inside one)
    if lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def split_preset(args: list[str]) -> tuple[str | None, list[str]]:
    """Positional arguments ``[PRESET] [key=value ...]``: an optional preset first (no '=', or a file),
    then key=value overrides (`embtie compare`, `embtie plan`)."""
    items = list(args)
    preset = None
    if items and ("=" not in items[0] or Path(items[0]).is_file()):
        preset = items.pop(0)
    for o in items:
        if "=" not in o:
            raise ConfigError(f"{o!r} is not a key=value override; give the preset first, then key=value overrides")
    return preset, items


@contextlib.contextmanager
def removed_if_refused(out: Path) -> Iterator[None]:
    """A run folder this command creates is removed again when the command fails before its first
    checkpoint (a setting refused while the data is read, a full disk): it holds nothing but the refused
    config, which would make the corrected command fail as 'another config'. A folder that existed before,
    or that holds a checkpoint, is left as it is."""
    import shutil

    from embtie.rundir import checkpoints

    existed = out.exists()
    try:
        yield
    except (EmbtieError, OSError):
        if not existed and out.is_dir() and checkpoints.latest(out) is None and int(os.environ.get("RANK", "0")) == 0:
            shutil.rmtree(out, ignore_errors=True)
        raise
