"""The records of the dataset catalogue: where each byte comes from and how it is checked.

A ``Dataset`` is a folder under the data root (``ptb/``, ``iwslt14/``, ...) made of ``DataEntry`` files,
each in one or more splits. An entry is either a public ``Source`` turned into embtie's file by a named
derivation (a copy, a gzip, a filter, ...), or an output of the dataset's preparation (``Dataset.prepare``:
a pipeline over the dataset's ``archives``, in ``embtie.data.prepare``).

Every pin says how it is known (``Pin``): checked here against the bytes in ``../shared/data``, computed from
the source repository's snapshot, a checksum the source publishes, a git blob id the source repository
records, or unverified here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import PurePosixPath


class Pin(Enum):
    """How the checksum of a file is known."""

    SHARED = "verified against ../shared/data"
    SNAPSHOT = "computed from the source repository's snapshot at the pinned commit (not held in ../shared/data)"
    PUBLISHED = "from the source's published checksum"
    GIT_BLOB = "by the git blob id the source repository records (sha256 unknown here)"
    UNVERIFIED = "unverified here"


@dataclass(frozen=True)
class Source:
    """A file at a stable public URL and the checksum of the bytes that URL serves."""

    url: str
    sha256: str | None = None
    pin: Pin = Pin.UNVERIFIED
    size: int | None = None
    """bytes the URL serves (None: unknown here)."""
    git_blob: str | None = None
    """the git blob id (``git hash-object``) of the bytes, when that is all that is known."""
    md5: str | None = None
    """a published MD5 of the bytes (checked too when given)."""
    name: str | None = None
    """the file name in the download cache (default: the URL's last component)."""

    @property
    def file_name(self) -> str:
        return self.name or PurePosixPath(self.url.split("?", 1)[0]).name


@dataclass(frozen=True)
class DataEntry:
    """One file of a dataset under the data root and how it is made."""

    relpath: str
    """path under the data root, e.g. ``ptb/ptb.train.txt.gz``."""
    splits: tuple[str, ...]
    sha256: str | None
    """sha256 of embtie's file (None: unknown here; then ``git_blob`` or nothing)."""
    pin: Pin
    source: Source | None = None
    """None: made by the dataset's preparation."""
    derive: str = "copy"
    """how embtie's file is made from ``source`` (a name of ``embtie.data.prepare.derive.DERIVATIONS``)."""
    git_blob: str | None = None
    lines: int | None = None
    note: str = ""


@dataclass(frozen=True)
class Dataset:
    """A dataset: its files by split, its licence, and (for prepared datasets) its archives and pipeline."""

    name: str
    title: str
    licence: str
    citation: str
    entries: tuple[DataEntry, ...]
    archives: tuple[Source, ...] = ()
    """inputs of ``prepare`` (downloaded, never kept under the data root)."""
    prepare: str | None = None
    """the preparation (``embtie.data.prepare.PREPARATIONS``) that makes the entries without a source."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    default_splits: tuple[str, ...] | None = None
    """the splits ``embtie data get NAME`` brings without --split (default: all)."""
    requires: tuple[str, ...] = ("wordsim",)
    """datasets ``get`` brings too: every run's diagnostics score its embeddings on the word-similarity sets."""

    @property
    def splits(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for e in self.entries:
            for s in e.splits:
                seen.setdefault(s, None)
        return tuple(seen)

    def entries_of(self, splits: tuple[str, ...] | list[str]) -> list[DataEntry]:
        return [e for e in self.entries if set(e.splits) & set(splits)]

    def entry(self, relpath: str) -> DataEntry | None:
        return next((e for e in self.entries if e.relpath == relpath), None)
