"""Reading members of downloaded archives (.tgz, .tar, .zip) with one-line errors for damaged ones."""

from __future__ import annotations

import tarfile
import zipfile
import zlib
from pathlib import Path

from embtie.errors import DataError


def damaged(path: Path, why: object) -> DataError:
    return DataError(
        f"the archive {path} is damaged or incomplete ({why}); delete it and run `embtie data get` again "
        "to download it anew"
    )


def tar_members(path: Path, suffixes: tuple[str, ...] | None = None) -> dict[str, bytes]:
    """name -> bytes of the regular files of a tar archive (gzipped or not): all, or those whose name ends
    with one of ``suffixes`` (the big WMT archives hold many language pairs: only the needed are read)."""
    try:
        with tarfile.open(path) as tar:
            return {
                m.name: _read(tar, m)
                for m in tar
                if m.isfile() and (suffixes is None or m.name.endswith(suffixes))
            }
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise damaged(path, e) from None


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    f = tar.extractfile(member)
    return b"" if f is None else f.read()


def zip_member(path: Path, suffix: str) -> bytes:
    """The bytes of the first member of a zip archive whose name ends with ``suffix``."""
    try:
        with zipfile.ZipFile(path) as z:
            name = next((n for n in z.namelist() if n.endswith(suffix)), None)
            if name is None:
                raise DataError(f"the archive {path} holds no file *{suffix}; is it the right archive?")
            return z.read(name)
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as e:
        raise damaged(path, e) from None


def member(members: dict[str, bytes], suffix: str, archive: Path) -> bytes:
    """The member whose path ends with ``suffix`` (e.g. ``de-en/train.tags.de-en.de``)."""
    for name, data in members.items():
        if name == suffix or name.endswith("/" + suffix):
            return data
    raise DataError(f"the archive {archive} holds no {suffix}; is it the right archive? delete it and run again")


def text_lines(data: bytes, what: str) -> list[str]:
    """Lines of UTF-8 text without their endings (as ``cat`` and Perl's line reading see them)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{what} is not UTF-8 text ({e}); is the archive the right one?") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
