"""The CI check: on a machine with no ../shared beside the checkout and EMBTIE_DATA unset, `embtie data get
ptb` from a (local) server puts PTB (and the word-similarity sets every run's diagnostics read) in the user
cache, and a tiny `embtie compare` runs on it. In process with the shared-root lookup set aside (fast), and
from a copy of the checkout in a fresh process (slow: about 40 s)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import serve_shared

REPO = Path(__file__).resolve().parents[2]
TINY = ["model.dim=16", "model.n_layers=1", "model.n_heads=2", "model.max_len=16", "data.bptt=16",
        "data.batch_size=4", "data.eval_batch_size=4", "data.train_tokens=4000", "data.valid_tokens=1200",
        "train.max_steps=4", "train.warmup_steps=0", "train.eval_every=2", "train.log_every=2",
        "train.checkpoint_every=0", "train.threads=1"]  # fmt: skip


def test_get_ptb_then_compare_with_no_shared_root(server, tmp_path, monkeypatch, capsys):
    from embtie import cli
    from embtie.data import files

    serve_shared(server, "ptb", ("train", "valid"))
    serve_shared(server, "wordsim", ("eval",))
    monkeypatch.setattr(files, "shared_data_root", lambda: tmp_path / "no" / "shared" / "data")
    for var in ("EMBTIE_DATA", "EMBTIE_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    monkeypatch.setenv("EMBTIE_DATA_MIRROR", server.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    cache = tmp_path / "home" / ".cache" / "embtie" / "data"
    assert files.data_root() == cache and not cache.exists()
    assert cli.main(["train", "ptb-gpt-tiny", *TINY, "--out", str(tmp_path / "r")]) == 2
    assert "`embtie data get ptb --split train`" in capsys.readouterr().err
    assert cli.main(["data", "get", "ptb", "--split", "train,valid"]) == 0
    assert f"2 file(s) added under {cache}" in capsys.readouterr().out
    out = tmp_path / "cmp"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "1", "--out", str(out)]
    assert cli.main([*argv, "--no-progress", *TINY]) == 0
    assert (out / "report.md").is_file() and (out / "results.csv").read_text().count("\n") == 3


@pytest.mark.slow
def test_get_ptb_then_compare_on_a_fresh_machine(server, tmp_path):
    serve_shared(server, "ptb", ("train", "valid"))
    serve_shared(server, "wordsim", ("eval",))  # every run's diagnostics read it: get brings it along
    checkout = tmp_path / "checkout"  # a checkout with no ../shared beside it
    shutil.copytree(REPO / "src", checkout / "src", ignore=shutil.ignore_patterns("__pycache__"))
    assert not (checkout.parent / "shared").exists()
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBTIE_", "XDG_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONPATH=str(checkout / "src"),
               EMBTIE_DATA_MIRROR=server.url, NO_PROXY="127.0.0.1", OMP_NUM_THREADS="1")  # fmt: skip

    def embtie(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "embtie", *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    before = embtie("train", "ptb-gpt-tiny", *TINY, "--out", str(tmp_path / "r"))
    assert before.returncode == 2 and "`embtie data get ptb --split train`" in before.stderr
    got = embtie("data", "get", "ptb", "--split", "train,valid")
    assert got.returncode == 0, got.stderr
    cache = home / ".cache" / "embtie" / "data"
    assert f"2 file(s) added under {cache}" in got.stdout and f"wordsim: 13 file(s) added under {cache}" in got.stdout
    assert embtie("data", "path", "ptb").stdout.strip() == str(cache / "ptb")
    out = tmp_path / "cmp"
    cmp = embtie("compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "1", "--out", str(out),
                 "--no-progress", *TINY)  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr[-2000:]
    assert (out / "report.md").is_file() and (out / "results.csv").read_text().count("\n") == 3
