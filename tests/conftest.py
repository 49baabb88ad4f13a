"""Shared by every test: the data root (../shared/data beside the checkout unless EMBTIE_DATA says
otherwise), this checkout's src/ on PYTHONPATH for subprocesses, and the tiny captioning dataset fixture.
Helpers the tests import live in tests/support/
(on the import path through ``pythonpath`` in pyproject.toml)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
# subprocesses (`python -m embtie`, torchrun workers) run this checkout's embtie too, as the tests themselves
# do (pyproject's pythonpath), whichever checkout the venv's editable install points at
_SRC = str(Path(__file__).resolve().parents[1] / "src")
_OLD = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
os.environ["PYTHONPATH"] = os.pathsep.join([_SRC, *_OLD])


@pytest.fixture(scope="module")
def flickr(tmp_path_factory) -> Path:
    """A tiny Flickr8k-like dataset (``captioning_data.make_dataset``), made once per test module."""
    pytest.importorskip("PIL.Image")
    from captioning_data import make_dataset

    return make_dataset(tmp_path_factory.mktemp("cap"))
