"""Every dataset embtie reads: its splits, files, source URLs, checksums, licence and derivations.

``embtie data list`` shows it; ``embtie data get NAME`` brings a dataset (``embtie.data.install``).
"""

from __future__ import annotations

import difflib

from embtie.data.catalogue.corpora import FLICKR8K, FLICKR8K_TEST_LIST, MULTI30K, PTB, WIKITEXT2, WORDSIM
from embtie.data.catalogue.model import DataEntry, Dataset, Pin, Source
from embtie.data.catalogue.prepared import IWSLT14, MSCOCO, WMT14, WMT16
from embtie.errors import DataError

__all__ = [
    "DATASETS",
    "FLICKR8K_TEST_LIST",
    "DataEntry",
    "Dataset",
    "Pin",
    "Source",
    "dataset",
    "entry_of",
    "get_command",
]

DATASETS: dict[str, Dataset] = {
    d.name: d for d in (PTB, WIKITEXT2, MULTI30K, IWSLT14, WMT16, WMT14, FLICKR8K, MSCOCO, WORDSIM)
}


def dataset(name: str) -> Dataset:
    """The dataset called ``name``; a DataError listing the names (and the closest one) otherwise."""
    if name in DATASETS:
        return DATASETS[name]
    close = difflib.get_close_matches(name, list(DATASETS), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise DataError(f"no dataset called {name!r}{hint} (datasets: {', '.join(DATASETS)}; see `embtie data list`)")


def entry_of(relpath: str) -> tuple[Dataset, DataEntry] | None:
    """The dataset and entry of a file under the data root (``ptb/ptb.valid.txt``), if the catalogue has it."""
    for d in DATASETS.values():
        e = d.entry(relpath)
        if e is not None:
            return d, e
    return None


def get_command(relpath: str) -> str | None:
    """The ``embtie data get ...`` command that brings the file ``relpath``, if the catalogue has it."""
    found = entry_of(relpath)
    if found is None:
        return None
    d, e = found
    if d.prepare is not None or set(e.splits) == set(d.splits):
        return f"embtie data get {d.name}"
    return f"embtie data get {d.name} --split {e.splits[0]}"
