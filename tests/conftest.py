"""Shared by every test: the data root (../shared/data beside the checkout unless EMBTIE_DATA says
otherwise) and the tiny captioning dataset fixture. Helpers the tests import live in tests/support/
(on the import path through ``pythonpath`` in pyproject.toml)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="module")
def flickr(tmp_path_factory) -> Path:
    """A tiny Flickr8k-like dataset (``captioning_data.make_dataset``), made once per test module."""
    pytest.importorskip("PIL.Image")
    from captioning_data import make_dataset

    return make_dataset(tmp_path_factory.mktemp("cap"))
