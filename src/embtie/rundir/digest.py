"""The sha256 of a file, computed once per process while the file keeps its size and modification time.

Weights, model configs and the user's data files are identified by content (``embtie.rundir.provenance``,
``embtie.rundir.inputs``); a data file of a few MB is hashed once however many results ask about it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_HASHES: dict[tuple[str, int, int], str] = {}
"""sha256 of files already hashed, by (resolved path, size, modification time in ns)."""


def file_sha256(path: Path) -> str:
    """The sha256 of a file (remembered while its size and modification time stay the same)."""
    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        _HASHES[key] = h.hexdigest()
    return _HASHES[key]
