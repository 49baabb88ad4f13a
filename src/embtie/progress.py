"""Progress bars for everything a user waits on (``bar``), shown only on a terminal and not with
--quiet, and one-line notes that do not break a running bar."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from tqdm import tqdm

QUIET_ENV = "EMBTIE_QUIET"
"""set to 1 (the CLI's --quiet does) to hide every progress bar."""


def interactive() -> bool:
    """Whether progress bars are shown: stderr is a terminal and quiet mode is off."""
    return os.environ.get(QUIET_ENV, "") in ("", "0") and sys.stderr.isatty()


def bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str | None = None, unit: str = "it",
        leave: bool = False, initial: int = 0, enabled: bool = True) -> tqdm:
    """A tqdm bar on stderr, disabled unless ``enabled`` and ``interactive()`` (logs stay clean)."""
    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, initial=initial, dynamic_ncols=True,
                file=sys.stderr, disable=not (enabled and interactive()))  # fmt: skip


def note(bar: tqdm, text: str) -> None:
    """A one-line warning on stderr that does not break a running bar (shown even when bars are not)."""
    if bar.disable:
        print(text, file=sys.stderr)
    else:
        bar.write(text, file=sys.stderr)
