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

DOCS_RUN = "tests/docs/test_docs_run.py"


@pytest.fixture(scope="module")
def flickr(tmp_path_factory) -> Path:
    """A tiny Flickr8k-like dataset (``captioning_data.make_dataset``), made once per test module."""
    pytest.importorskip("PIL.Image")
    from captioning_data import make_dataset

    return make_dataset(tmp_path_factory.mktemp("cap"))


def xdist_scope(nodeid: str) -> str:
    """The work unit of a test under ``pytest -n N`` (``make test``): its module, so a module's tests run in
    order on one worker and its module-scoped fixtures are built once; the documentation blocks of
    tests/docs/test_docs_run.py by documentation file (``...[docs/reference.md#3]``: a file's blocks share a
    folder and run in order) and its --help examples together, so that the files spread over the workers."""
    module, _, test = nodeid.partition("::")
    if module != DOCS_RUN or "[" not in test:
        return module
    function, _, param = test.partition("[")
    return f"{module}::{param.split('#')[0]}" if function == "test_documented_block_runs" else f"{module}::{function}"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` with the units of ``xdist_scope`` (xdist's own ``--dist loadgroup`` cannot be
    used: it reads ``xdist_group`` marks through ``item._nodeid``, which pytest 9 no longer has, so every
    test became a unit of its own; measured with pytest 9.2 and pytest-xdist 3.8.0)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return ByScope(config, log)
