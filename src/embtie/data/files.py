"""Where datasets live, and reading them safely: checksums verified, missing files named clearly.

The data root is ``$EMBTIE_DATA`` when set, else ``../shared/data`` next to the repository checkout
(the layout of this project's machines) when it exists, else the user cache (``user_data_cache``).
A file is read from the data root, or from the user cache when the root lacks it (``embtie data get``
writes there when the data root is read-only, e.g. the test splits beside a shared copy).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from embtie.errors import DataError

_REPO_ROOT = Path(__file__).resolve().parents[3]


def user_data_cache() -> Path:
    """``$EMBTIE_CACHE/data`` when EMBTIE_CACHE is set, else the user cache folder (platformdirs:
    ``~/.cache/embtie/data`` on Linux, ``$XDG_CACHE_HOME/embtie/data`` when that is set)."""
    env = os.environ.get("EMBTIE_CACHE")
    if env:
        return Path(env).expanduser() / "data"
    import platformdirs

    return Path(platformdirs.user_cache_dir("embtie")) / "data"


def shared_data_root() -> Path:
    """``../shared/data`` beside the repository checkout (it may not exist)."""
    return _REPO_ROOT.parent / "shared" / "data"


def data_root() -> Path:
    """The folder that holds ptb/, wikitext-2/, multi30k/, iwslt14/, wordsim/: ``$EMBTIE_DATA``, else
    ``../shared/data`` when it exists, else the user cache (which may not exist yet)."""
    env = os.environ.get("EMBTIE_DATA")
    if env:
        root = Path(env).expanduser()
        if not root.is_dir():
            raise DataError(f"EMBTIE_DATA={env} is not a folder; point it at the folder holding ptb/, multi30k/, ...")
        return root
    shared = shared_data_root()
    return shared if shared.is_dir() else user_data_cache()


def data_roots() -> list[Path]:
    """Where files are looked for, in order: the data root, then the user cache."""
    root, cache = data_root(), user_data_cache()
    return [root] if cache == root else [root, cache]


def locate(relpath: str) -> Path:
    """The file ``relpath`` in the first of ``data_roots()`` that holds it (else where the data root would)."""
    roots = data_roots()
    return next((r / relpath for r in roots if (r / relpath).is_file()), roots[0] / relpath)


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: its path under the data root and the sha256 of the file as stored."""

    relpath: str
    sha256: str | None = None

    def path(self, root: Path | None = None) -> Path:
        """The file under ``root``, or where ``locate`` finds it."""
        return root / self.relpath if root is not None else locate(self.relpath)


_VERIFIED: set[tuple[str, int, float]] = set()


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(path: Path, sha256: str | None) -> None:
    """Raise DataError if ``path`` is missing or its sha256 differs (verified once per process)."""
    if not path.is_file():
        raise DataError(f"missing data file {path}; {missing_hint(path)}")
    if sha256 is None:
        return
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime)
    if key in _VERIFIED:
        return
    got = sha256_of(path)
    if got != sha256:
        raise DataError(
            f"corrupted data file {path}: sha256 {got[:12]}... != expected {sha256[:12]}...; "
            "restore it from its source (see SOURCE.md beside it)"
        )
    _VERIFIED.add(key)


def data_root_hint() -> str:
    return os.environ.get("EMBTIE_DATA", "unset")


def missing_hint(path: Path) -> str:
    """How to bring a missing dataset file: the ``embtie data get`` that makes it, and where files are read."""
    from embtie.data.catalogue import get_command

    where = f"check EMBTIE_DATA (now {data_root_hint()})"
    for root in data_roots():
        try:
            rel = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        command = get_command(rel)
        if command is not None:
            return f"bring it with `{command}` ({where})"
    return where


def require(files: list[DataFile], dataset: str, split: str, own: str) -> None:
    """A DataError when a file of ``dataset``'s ``split`` is not here: it names the file, the ``embtie data
    get`` that brings it, and ``own``, the way to give one's own data instead."""
    from embtie.data.catalogue import get_command

    for f in files:
        path = f.path()
        if not path.is_file():
            command = get_command(f.relpath) or f"embtie data get {dataset}"
            raise DataError(
                f"missing data file {path}: split {split!r} of {dataset} is not available here; bring it with "
                f"`{command}` (EMBTIE_DATA now {data_root_hint()}), or {own}"
            )


def decode_utf8(data: bytes, what: str) -> str:
    """``data`` decoded as UTF-8; a DataError naming ``what``, the byte and its line otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataError(
            f"{what} is not UTF-8 text (byte {data[e.start]:#04x} on line {line}); "
            "convert it, e.g. `iconv -f latin1 -t utf-8`"
        ) from None


def read_text(path: Path, sha256: str | None = None) -> str:
    """The whole text of a (possibly gzipped) UTF-8 file, after verifying its checksum when given.

    A file that cannot be read, is not valid gzip, is not UTF-8 or holds NUL bytes (binary) is a
    DataError naming the file."""
    verify(path, sha256)
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        reason = getattr(e, "strerror", None) or e  # foreign: an OSError, EOFError or zlib.error
        raise DataError(f"cannot read {path}: {reason}") from None
    text = decode_utf8(data, str(path))
    if "\x00" in text:
        raise DataError(f"{path} looks like a binary file (it holds NUL bytes); give a text file")
    return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as open() in text mode


def read_lines(path: Path, sha256: str | None = None) -> list[str]:
    """Lines of a text file without their line endings (CRLF tolerated)."""
    return [line.rstrip("\r") for line in read_text(path, sha256).splitlines()]


def user_file(path: str | os.PathLike[str], what: str) -> Path:
    """A file the user named on the command line; a clear error when it does not exist or is a folder."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise DataError(f"{what} {p} is a folder; give the path of a text file")
    if p.exists() and not p.is_file():
        raise DataError(f"{what} {p} is not a regular file (a device or a pipe); give the path of a text file")
    if not p.is_file():
        raise DataError(f"{what} {p} does not exist; give the path of an existing text file")
    if not os.access(p, os.R_OK, effective_ids=os.access in os.supports_effective_ids):
        raise DataError(f"{what} {p} exists but cannot be read (permission denied); check its permissions")
    return p


def read_user_text(path: str | os.PathLike[str], what: str) -> str:
    """The text of a file the user named (``what``: e.g. "--test-file"): it must exist, be UTF-8 text
    and hold at least one word; a DataError naming the option and the file otherwise."""
    p = user_file(path, what)
    try:
        text = read_text(p)
    except DataError as e:
        raise DataError(f"{what} {e}") from None
    if not text.split():
        raise DataError(f"{what} {p} is empty; give a text file with one sentence per line")
    return text


def read_user_lines(path: str | os.PathLike[str], what: str) -> list[str]:
    """Lines of a user file (see ``read_user_text``), without their line endings."""
    return [line.rstrip("\r") for line in read_user_text(path, what).splitlines()]
