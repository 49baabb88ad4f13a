"""Downloads with pooch: one pinned file at a time, into the download cache, checked and atomic.

pooch writes each download to a temporary file beside its destination and moves it into place only once
the sha256 matches, so an interrupted download, a full disk or wrong bytes leave nothing behind; a file
already in the cache with the right checksum is not downloaded again. Files whose sha256 is not known
here are checked by their git blob id or published md5 when the catalogue has one.

``$EMBTIE_DATA_MIRROR`` (or ``embtie data get --mirror URL``) fetches every file from a mirror that holds
it under its URL's host and path: ``https://HOST/PATH`` -> ``MIRROR/HOST/PATH``.
Every failure is a one-line DataError naming the problem and the fix (for no network: the URL and the
exact path to put the file at).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
from pathlib import Path

from embtie.data.catalogue import Source
from embtie.data.files import sha256_of, user_data_cache
from embtie.errors import DataError

MIRROR_ENV = "EMBTIE_DATA_MIRROR"
TIMEOUT_S = 60.0


def downloads_dir() -> Path:
    """The download cache: ``downloads/`` beside the user data cache (``~/.cache/embtie/downloads``)."""
    return user_data_cache().parent / "downloads"


def cache_path(source: Source, dataset: str) -> Path:
    """Where the download of ``source`` is kept (and where to put it by hand without network)."""
    return downloads_dir() / dataset / source.file_name


def resolve_url(url: str, mirror: str | None = None) -> str:
    """``url``, or its place on the mirror (``mirror`` or ``$EMBTIE_DATA_MIRROR``): MIRROR/HOST/PATH."""
    mirror = check_mirror(mirror)
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + url.split("://", 1)[-1]


def check_mirror(mirror: str | None) -> str | None:
    """The mirror to use (``mirror``, else ``$EMBTIE_DATA_MIRROR``, else None), checked to be a URL: a
    DataError naming it otherwise (not a cache or network problem)."""
    given = mirror
    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    if mirror and not re.fullmatch(r"(https?|ftp|sftp)://[^/\s]+.*", mirror.strip()):
        where = "--mirror" if given else f"${MIRROR_ENV}"
        raise DataError(
            f"{where} {mirror!r} is not a URL: give the address of a mirror, e.g. http://127.0.0.1:8000 or "
            "https://example.org/embtie-mirror (it must hold each file under HOST/PATH)"
        )
    return mirror


def git_blob_id(path: Path) -> str:
    """``git hash-object PATH``: sha1 of ``blob <size>\\0`` and the bytes."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def md5_of(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(source: Source, dataset: str, mirror: str | None = None, progress: bool = False) -> Path:
    """The file of ``source`` in the download cache, downloaded when it is not there, checksum verified."""
    import pooch

    target = cache_path(source, dataset)
    url = resolve_url(source.url, mirror)
    known = f"sha256:{source.sha256}" if source.sha256 else None
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        got = Path(pooch.retrieve(
            url, known, fname=target.name, path=target.parent, progressbar=progress,
            downloader=pooch.HTTPDownloader(progressbar=progress, timeout=TIMEOUT_S),
        ))  # fmt: skip
    except Exception as e:  # requests' and pooch's errors, and OSError: each becomes one line
        raise (wrong_file_error(source, target, url) or download_error(e, source, url, target, dataset)) from None
    finally:
        logger.setLevel(level)
    check_other_sums(got, source, url)
    return got


def check_other_sums(path: Path, source: Source, url: str) -> None:
    """Without a sha256: check the git blob id and md5 the catalogue has; a mismatch removes the file."""
    if source.sha256 is not None:
        return
    for kind, want, got in (
        ("git blob id", source.git_blob, git_blob_id(path) if source.git_blob else None),
        ("md5", source.md5, md5_of(path) if source.md5 else None),
    ):
        if want is not None and got != want:
            path.unlink(missing_ok=True)
            raise DataError(
                f"checksum mismatch: {url} served bytes whose {kind} is {got}, not the pinned {want}; the file was "
                "removed: the source changed or a proxy altered it; try again later or from a mirror (--mirror URL)"
            )


def wrong_file_error(source: Source, target: Path, url: str) -> DataError | None:
    """When the download (from ``url``: the source's, or its place on the mirror) failed and a file with the wrong
    sha256 sits where an earlier message said to put the download by hand: a DataError saying that file is not
    the one expected (damaged, or another file; never the same advice again)."""
    if not (source.sha256 and target.is_file()):
        return None
    have = sha256_of(target)
    if have == source.sha256:
        return None
    return DataError(
        f"{target} is not the file expected there ({target.stat().st_size:,} bytes, sha256 {have[:12]}..., expected "
        f"{source.sha256[:12]}...): it is damaged or another file; the download from {url} to replace it failed "
        "too: remove it and download that URL to this path (or run the command again once the server answers)"
    )


def download_error(e: Exception, source: Source, url: str, target: Path, dataset: str) -> DataError:
    """One line naming what went wrong with the download of ``source`` and the fix."""
    import requests

    by_hand = f"download {url} yourself and put it at {target}, then run `embtie data get {dataset}` again"
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        need = f" (the file is {source.size / 1e6:.1f} MB)" if source.size else ""
        return DataError(f"the disk is full: cannot write {target}{need}; free some space and run the command again")
    if isinstance(e, ValueError) and "hash" in str(e).lower():
        return DataError(
            f"checksum mismatch: {url} served bytes whose sha256 is not the pinned {source.sha256}; nothing was "
            "kept: the source changed or a proxy altered it; try again later or from a mirror (--mirror URL), or "
            f"{by_hand}"
        )
    if isinstance(e, requests.exceptions.HTTPError):
        status = e.response.status_code if e.response is not None else "?"
        return DataError(f"{url} answered HTTP {status}: the file is not there (moved?); {by_hand}")
    if isinstance(e, requests.exceptions.ChunkedEncodingError | requests.exceptions.ContentDecodingError):
        return DataError(f"the download of {url} was interrupted ({_reason(e)}); nothing was kept: run the command "
                         "again")  # fmt: skip
    if isinstance(e, requests.exceptions.Timeout):
        return DataError(f"the download of {url} timed out; nothing was kept: run the command again, or {by_hand}")
    if isinstance(
        e, requests.exceptions.InvalidURL | requests.exceptions.MissingSchema | requests.exceptions.InvalidSchema
    ):
        return DataError(f"{url!r} is not a URL that can be downloaded ({_reason(e)}); check --mirror or {MIRROR_ENV}")
    if isinstance(e, requests.exceptions.ConnectionError):
        host = url.split("://", 1)[-1].split("/", 1)[0]
        return DataError(f"cannot reach {host} ({_reason(e)}): no network, or the server is down; {by_hand}")
    if isinstance(e, OSError):
        return DataError(f"cannot write {target}: {e.strerror or e}; choose a writable cache (EMBTIE_CACHE=DIR)")
    return DataError(f"the download of {url} failed ({type(e).__name__}: {_reason(e)}); {by_hand}")


def _reason(e: Exception) -> str:
    """The innermost message of a requests/urllib3 error, short."""
    text = str(e.args[0] if e.args else e)
    for marker in ("Connection refused", "Name or service not known", "Temporary failure in name resolution",
                   "Network is unreachable", "IncompleteRead", "Connection broken", "timed out",
                   "Connection reset", "No route to host"):  # fmt: skip
        if marker in text:
            return marker
    return text.splitlines()[0][:160] if text else type(e).__name__
