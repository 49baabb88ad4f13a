"""What a strategy label of a comparison may be: the name of its arm in the report and of its folder
``DIR/runs/<label>``, so a label is a safe, bounded file name, checked when --strategies is read (before
anything trains).

The rule: letters, digits, ``-``, ``_``, ``+`` and ``.``, beginning with a letter or a digit, at most
``MAX_LABEL`` characters. So a label is never ``.`` or ``..`` (the comparison's own folder or its parent),
never a hidden folder, never a path (no ``/``), never read as an option (no leading ``-``), and never longer
than a file system's name limit (255 bytes) allows; and no two labels of one comparison differ only in case
(a case-insensitive file system, macOS' and Windows' default, would give them one folder).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from embtie.errors import ConfigError

MAX_LABEL = 64
"""the longest label: room for a readable name (``fixed-b-t2048-lr30``) and far below a file name's 255 bytes."""

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
ALPHABET = "letters, digits, '-', '_', '+' and '.', beginning with a letter or a digit"


def check_label(label: str, item: str) -> None:
    """``label`` (of the --strategies entry ``item``) is a safe folder name, or a one-line ConfigError."""
    if not _LABEL.fullmatch(label):
        raise ConfigError(
            f"bad strategy label {label!r} in {item!r}: a label names the folder runs/<label>, so it takes "
            f"{ALPHABET}; e.g. untied-lr2=untied:train.lr=0.002"
        )
    if len(label) > MAX_LABEL:
        raise ConfigError(
            f"the strategy label {label[:20]}... in --strategies has {len(label)} characters; a label names the "
            f"folder runs/<label> and the report's rows: give one of at most {MAX_LABEL}"
        )


def check_distinct(labels: Iterable[str]) -> None:
    """No two labels that differ only in case (one folder on a case-insensitive file system)."""
    seen: dict[str, str] = {}
    for label in labels:
        other = seen.setdefault(label.casefold(), label)
        if other != label:
            raise ConfigError(
                f"--strategies has the labels {other!r} and {label!r}, which differ only in case: a case-insensitive "
                "file system (macOS', Windows') gives them one folder; rename one of them"
            )
