"""Writing files so that a failure leaves nothing half-written, and a full disk is an ordinary OSError:
``write_atomic`` (a temporary file renamed into place), ``os_errors`` (safetensors' write errors raised as
the OSError they are) and ``save_tensors`` (safetensors' save_file under it).

The bottom layer of embtie: it imports nothing of embtie, so any module that writes a file (run
directories, analyses, comparisons, commands, data caches) can use it without importing ``rundir``."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import SafetensorError

if TYPE_CHECKING:
    from torch import Tensor


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (str as UTF-8, or bytes) to ``path`` through a temporary file and ``os.replace``; a
    failed write (a full disk) removes the temporary file and raises the OSError."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def os_errors(path: Path) -> Iterator[None]:
    """safetensors reports a failed write (``No space left on device``) as a SafetensorError naming the OS
    error code; raise it as the OSError it is (naming ``path``), so that callers and the command line treat
    a full disk as the ordinary error it is."""
    try:
        yield
    except SafetensorError as e:
        m = re.search(r"(?:code: |os error )(\d+)", str(e))
        if m is None:
            raise
        code = int(m.group(1))
        raise OSError(code, os.strerror(code), str(path)) from None


def save_tensors(tensors: dict[str, Tensor], path: Path, metadata: dict[str, str] | None = None) -> None:
    """``safetensors.torch.save_file`` with a failed write raised as an OSError (``os_errors``)."""
    from safetensors.torch import save_file

    with os_errors(path):
        save_file(tensors, str(path), metadata=metadata)
