"""The papers' preparation pipelines: each turns a dataset's downloaded archives into its files.

A preparation is ``(archives, out, say) -> None``: ``archives`` are the downloaded files of
``Dataset.archives`` in order, ``out`` the (staging) data root to write ``<dataset>/...`` under, and ``say``
prints a progress line. ``embtie.data.install`` checks the outputs against the catalogue's pins.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

Preparation = Callable[[list[Path], Path, Callable[[str], None]], None]

PREPARATIONS: dict[str, str] = {
    "iwslt14": "embtie.data.prepare.iwslt14:prepare",
    "wmt16": "embtie.data.prepare.wmt:prepare_wmt16",
    "wmt14": "embtie.data.prepare.wmt:prepare_wmt14",
    "mscoco": "embtie.data.prepare.mscoco:prepare",
}
"""name -> ``module:function`` (imported on use: the pipelines need sacremoses and subword-nmt)."""


def preparation(name: str) -> Preparation:
    module, _, func = PREPARATIONS[name].partition(":")
    fn: Preparation = getattr(importlib.import_module(module), func)
    return fn
