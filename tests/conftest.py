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
# `make test` runs pytest-xdist workers, one per core: each worker's torch (and every process it starts) takes
# one thread, as the tests that train already ask (train.threads=1), instead of one per core in every worker
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n N --dist loadgroup`` (``make test``) the tests of one module run on one worker, in
    order, so a module-scoped fixture (a run trained once and shared) is built once; a test that names its
    own ``xdist_group`` keeps it (tests/docs/test_docs_run.py groups its blocks by documentation file).
    ``tryfirst``: xdist reads the groups in its own hook of this name."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.fixture(scope="module")
def flickr(tmp_path_factory) -> Path:
    """A tiny Flickr8k-like dataset (``captioning_data.make_dataset``), made once per test module."""
    pytest.importorskip("PIL.Image")
    from captioning_data import make_dataset

    return make_dataset(tmp_path_factory.mktemp("cap"))
