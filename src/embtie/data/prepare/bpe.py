"""Joint BPE with subword-nmt, as the preparation scripts run ``learn_bpe.py`` and ``apply_bpe.py``."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path


def learn(lines: list[str], merges: int, code_file: Path) -> None:
    """``learn_bpe.py -s MERGES < TEXT > CODE`` (min frequency 2, subword-nmt's defaults)."""
    from subword_nmt.learn_bpe import learn_bpe

    text = io.StringIO("".join(line + "\n" for line in lines))
    # its progress bar and "no pair has frequency >= 2" notes: on a terminal only
    quiet = contextlib.nullcontext() if sys.stderr.isatty() else contextlib.redirect_stderr(io.StringIO())
    with open(code_file, "w", encoding="utf-8") as out, quiet:
        learn_bpe(text, out, merges)


def apply(code_file: Path, lines: list[str]) -> list[str]:
    """``apply_bpe.py -c CODE``: each line segmented with ``@@ `` separators."""
    from subword_nmt.apply_bpe import BPE

    with open(code_file, encoding="utf-8") as f:
        bpe = BPE(f)
    return [bpe.process_line(line) for line in lines]
