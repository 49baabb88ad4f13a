"""Readers of a run that may be training: eval and analyze take no lock, read the newest complete
checkpoint (again, when training removed the one they picked) and record it; diagnostics of older code
are still read; a checkpoint that does not fit names its tensors (tied ones are not missing)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from embtie.analysis import run_diagnostics
from embtie.analysis.records import RunDiagnostics
from embtie.cli import main
from embtie.config import load_config
from embtie.rundir import checkpoints, lock, provenance
from embtie.rundir.loading import load_run
from embtie.training import train
from lock_holders import hold, stop
from tiny_runs import TINY_GPT_BODY

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
TINY = [*TINY_GPT_BODY, "train.max_steps=2", "train.checkpoint_every=1", "train.keep_checkpoints=2"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("prov") / "run"
    train(load_config("ptb-gpt-tiny", TINY), out)
    return out


def test_eval_and_analyze_read_a_run_whose_lock_another_process_holds(run, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    p = hold(copy)
    try:
        assert main(["eval", str(copy)]) == 0
        assert main(["analyze", str(copy), "--batches", "1"]) == 0
        assert (copy / lock.INFO).is_file()  # the trainer's lock is left alone
    finally:
        stop(p)
    sha = provenance.file_sha256(copy / "checkpoints" / "step-00000002" / "model.safetensors")
    saved = json.loads((copy / "eval.json").read_text(encoding="utf-8"))["valid"]["provenance"]
    assert saved == {"checkpoint": "step-00000002", "step": 2, "model_sha256": sha, "command": f"embtie eval {copy}"}
    diag = json.loads((copy / "analysis" / "diagnostics.json").read_text(encoding="utf-8"))["provenance"]
    assert diag["model_sha256"] == sha and diag["step"] == 2
    assert not any(p.name.startswith(".") for p in (copy / "analysis").iterdir())  # no temporary files left
    assert "note" not in capsys.readouterr().err


def test_loading_picks_the_newest_checkpoint_again_when_training_removed_it(run, monkeypatch):
    real = checkpoints.load_weights
    calls = []

    def removed_once(model, ckpt, use="load"):
        calls.append(Path(ckpt).name)
        if len(calls) == 1:
            raise FileNotFoundError(2, "No such file or directory", str(ckpt))
        return real(model, ckpt, use)

    monkeypatch.setattr(checkpoints, "load_weights", removed_once)
    loaded = load_run(run)
    assert calls == ["step-00000002", "step-00000002"] and loaded.checkpoint.name == "step-00000002"
    assert loaded.source().model_sha256 == provenance.file_sha256(loaded.checkpoint / "model.safetensors")


def test_diagnostics_of_older_code_without_checkpoints_are_read_as_they_are(run, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    run_diagnostics.analyse(copy, 1)
    path = copy / "analysis" / "diagnostics.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    del raw["provenance"]
    text = json.dumps(raw, indent=1)
    path.write_text(text, encoding="utf-8")
    shutil.rmtree(copy / "checkpoints")  # as the stored runs of tests/fixtures/report_regen
    loaded = run_diagnostics.read(copy)
    assert loaded is not None and loaded[0].provenance is None
    assert path.read_text(encoding="utf-8") == text and capsys.readouterr().err == ""
    assert json.dumps(loaded[0].to_json(), indent=1) == text  # read and written back byte for byte


def test_provenance_round_trips_through_the_record(run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    diag, _ = run_diagnostics.analyse(copy, 1, command="embtie analyze x")
    raw = diag.to_json()
    assert list(raw)[-1] == "provenance" and raw["provenance"]["command"] == "embtie analyze x"
    assert RunDiagnostics.from_json(raw).to_json() == raw
    assert run_diagnostics.stale_reason(copy, diag) is None


def test_tied_weights_stored_once_are_not_missing():
    """A translation model whose source embedding is the sharing strategy: one tensor, two names."""
    import torch

    from embtie import sharing

    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sharing = sharing.build("tied", vocab_size=10, dim=4)
            self.src_embed = self.sharing

    m = Tied()
    assert checkpoints.misfit(m, {"sharing.weight": (10, 4)}) == []
    assert checkpoints.misfit(m, {"sharing.weight": (12, 4)}) == [
        "shapes differ: sharing.weight is (12, 4) in the checkpoint, (10, 4) in the model"
    ]
    assert checkpoints.misfit(m, {}) == ["missing: sharing.weight (10, 4)"]
