"""``embtie data get``: bring a dataset into the data root, verified, with nothing half-written left behind.

Every file is downloaded (``embtie.data.download``), derived or prepared (``embtie.data.prepare``) into a
hidden staging folder of the data root, checked against the catalogue's pins, and only then moved into
place; a failure removes the staging folder, and a later ``get`` removes the staging folder a killed one
left. Files already present and intact are kept. When the data root is read-only (a shared copy), the
files go to the user cache, where embtie reads them too.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from embtie.data import catalogue
from embtie.data.catalogue import DataEntry, Dataset
from embtie.data.download import fetch, git_blob_id
from embtie.data.files import data_root, data_roots, sha256_of, user_data_cache
from embtie.errors import DataError

STAGING = ".embtie-staging-"

Say = Callable[[str], None]


@dataclass
class Installed:
    """What one ``get`` did."""

    dataset: str
    root: Path
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def check_file(path: Path, entry: DataEntry) -> str | None:
    """None when ``path`` matches the entry's pin (or it has none); else what differs."""
    if entry.sha256 is not None:
        got = sha256_of(path)
        return None if got == entry.sha256 else f"sha256 {got} != pinned {entry.sha256}"
    if entry.git_blob is not None:
        got = git_blob_id(path)
        return None if got == entry.git_blob else f"git blob id {got} != pinned {entry.git_blob}"
    return None


def present(entry: DataEntry) -> Path | None:
    """The entry's file in the first data root that holds it."""
    return next((r / entry.relpath for r in data_roots() if (r / entry.relpath).is_file()), None)


def writable(folder: Path) -> bool:
    """``folder`` can be written and is meant to be: a folder without write bits (a shared copy) is not,
    even for root, who could write it anyway."""
    return os.access(folder, os.W_OK | os.X_OK) and bool(folder.stat().st_mode & 0o222)


def writable_root(say: Say) -> Path:
    """The data root when it can be written, else the user cache (said once)."""
    root = data_root()
    if root.is_dir() and writable(root):
        return root
    if not root.exists():
        root.mkdir(parents=True, exist_ok=True)
        return root
    cache = user_data_cache()
    say(f"the data root {root} is read-only: writing to {cache} (embtie reads files there too)")
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def choose_splits(d: Dataset, splits: list[str] | None) -> list[str]:
    if not splits:
        return list(d.default_splits or d.splits)
    unknown = [s for s in splits if s not in d.splits]
    if unknown:
        raise DataError(f"{d.name} has no split {unknown[0]!r}; its splits: {', '.join(d.splits)}")
    return splits


def get(name: str, splits: list[str] | None = None, mirror: str | None = None, say: Say = print,
        progress: bool = False) -> Installed:  # fmt: skip
    """Bring the ``splits`` of dataset ``name`` (default: all) into the data root, and the datasets it
    requires (``Dataset.requires``)."""
    d = catalogue.dataset(name)
    done = _get_one(d, choose_splits(d, splits), mirror, say, progress)
    for other in d.requires:
        needed = get(other, None, mirror, say, progress)
        if needed.added:
            say(f"{other}: {len(needed.added)} file(s) added under {needed.root} (every run's diagnostics read it)")
    return done


def _get_one(d: Dataset, wanted: list[str], mirror: str | None, say: Say, progress: bool) -> Installed:
    """Bring the files of ``wanted`` splits of ``d`` that are not here and intact (all, for a preparation)."""
    entries = list(d.entries) if d.prepare is not None else d.entries_of(wanted)
    done = Installed(d.name, data_root())
    todo = []
    for e in entries:
        path = present(e)
        if path is not None and check_file(path, e) is None:
            done.kept.append(e.relpath)
        else:
            todo.append(e)
    if not todo:
        return done
    root = writable_root(say)
    done.root = root
    remove_stale_staging(root)
    groups = [todo] if d.prepare is not None else _by_split(todo, wanted)
    missing: dict[str, str] = {}
    for group in groups:
        try:
            _build_and_install(d, group, root, mirror, say, progress)
        except DataError as e:
            if len(groups) == 1:
                raise
            missing[", ".join(group[0].splits)] = str(e)
        else:
            done.added += [e.relpath for e in group]
    if missing:
        kept = f"kept what arrived ({len(done.added)} file(s) under {root})" if done.added else "nothing arrived"
        first = next(iter(missing.values()))
        raise DataError(f"{d.name}: split {'; '.join(missing)} could not be fetched ({first}); {kept}; bring the "
                        f"rest with `embtie data get {d.name} --split {','.join(missing)}`")  # fmt: skip
    return done


def _by_split(todo: list[DataEntry], wanted: list[str]) -> list[list[DataEntry]]:
    """The files of ``todo`` in groups of one split each (a file of several splits in its first wanted one)."""
    groups: dict[str, list[DataEntry]] = {}
    for e in todo:
        split = next((s for s in wanted if s in e.splits), e.splits[0])
        groups.setdefault(split, []).append(e)
    return list(groups.values())


def _build_and_install(d: Dataset, todo: list[DataEntry], root: Path, mirror: str | None, say: Say,
                       progress: bool) -> None:  # fmt: skip
    """Make, check and move into place the files of ``todo`` (all or none of them)."""
    staging = root / f"{STAGING}{d.name}-{os.getpid()}"
    try:
        _build(d, todo, staging, mirror, say, progress)
        _install(todo, staging, root)
    except OSError as e:
        raise _os_error(e, root) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _build(d: Dataset, todo: list[DataEntry], staging: Path, mirror: str | None, say: Say, progress: bool) -> None:
    """Make every file of ``todo`` under ``staging`` and check it."""
    from embtie.data.prepare import preparation
    from embtie.data.prepare.derive import DERIVATIONS

    staging.mkdir(parents=True)

    def get_source(source: catalogue.Source) -> Path:
        say(f"fetching {source.url}")
        path = fetch(source, d.name, mirror, progress)
        if source.sha256 is None and source.git_blob is None and source.md5 is None:
            say(f"unverified here: {source.file_name} has sha256 {sha256_of(path)} (no published checksum)")
        return path

    if d.prepare is not None:
        archives = [get_source(a) for a in d.archives]
        say(f"preparing {d.name} ({d.prepare} pipeline)")
        preparation(d.prepare)(archives, staging, say)
    for e in todo:
        dst = staging / e.relpath
        if e.source is not None:
            dst.parent.mkdir(parents=True, exist_ok=True)
            DERIVATIONS[e.derive](get_source(e.source), dst, get_source)
        if not dst.is_file():
            raise DataError(f"the {d.prepare} preparation did not make {e.relpath}; please report it")
        problem = check_file(dst, e)
        if problem is not None:
            raise DataError(
                f"{e.relpath} as made here differs from the pinned file ({problem}); nothing was installed: "
                f"the source served other bytes than the pinned ones; please report it"
            )


def _install(todo: list[DataEntry], staging: Path, root: Path) -> None:
    """Move the checked files into place (a rename each: a file is there whole or not at all)."""
    for e in todo:
        dst = root / e.relpath
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / e.relpath, dst)


def remove_stale_staging(root: Path) -> None:
    """Remove staging folders of ``get`` runs that were killed (their process is gone)."""
    for p in root.glob(f"{STAGING}*"):
        pid = p.name.rpartition("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _os_error(e: OSError, root: Path) -> DataError:
    if e.errno == errno.ENOSPC:
        return DataError(f"the disk is full under {root}: nothing was installed; free some space and run the "
                         "command again")  # fmt: skip
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return DataError(f"cannot write under {root} ({e.strerror}); set EMBTIE_DATA to a folder you can write to")
    return DataError(f"cannot prepare the data under {root}: {e.strerror or e} ({e.filename or ''})")
