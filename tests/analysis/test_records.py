"""The typed records of a run's analysis: they read the files that older code wrote, and write them back
key for key, so that reports redrawn from saved runs do not change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from embtie.analysis import run_diagnostics
from embtie.analysis.json_records import json_default
from embtie.analysis.records import RunArrays, RunDiagnostics, TranslationScores
from embtie.errors import DataError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report_regen"
ANALYSED = sorted(FIXTURES.glob("*/runs/*/seed*/analysis"))


def test_the_fixtures_cover_every_task():
    tasks = {json.loads((d / "diagnostics.json").read_text())["task"] for d in ANALYSED}
    assert tasks == {"lm", "translation", "captioning"}


@pytest.mark.parametrize("analysis", ANALYSED, ids=lambda d: "/".join(d.parts[-5:-1]))
def test_saved_diagnostics_are_written_back_as_they_were(analysis: Path):
    text = (analysis / "diagnostics.json").read_text(encoding="utf-8")
    diag = RunDiagnostics.from_json(json.loads(text))
    assert json.dumps(diag.to_json(), indent=1, default=json_default) == text


def test_read_gives_typed_records_and_arrays():
    run = FIXTURES / "translation" / "runs" / "tied" / "seed0"
    loaded = run_diagnostics.read(run)
    assert loaded is not None
    diag, arrays = loaded
    assert diag.translation is not None and diag.captioning is None
    assert diag.translation.scores.bleu_text == "detokenized" and diag.norm_frequency is not None
    assert arrays.bleu_stats is not None and arrays.bleu_stats.shape[0] == diag.translation.scores.sentences
    assert arrays.counts is not None and arrays.counts.shape == (diag.vocab_size,)
    assert arrays.valid_units.shape == (diag.valid.units, 2)


def test_writing_keeps_the_files(tmp_path: Path):
    run = FIXTURES / "captioning" / "runs" / "untied" / "seed1"
    loaded = run_diagnostics.read(run)
    assert loaded is not None
    run_diagnostics.write(tmp_path, *loaded)
    out = tmp_path / run_diagnostics.ANALYSIS_DIR
    assert (out / "diagnostics.json").read_text() == (run / "analysis" / "diagnostics.json").read_text()
    with np.load(out / "arrays.npz") as new, np.load(run / "analysis" / "arrays.npz") as old:
        assert sorted(new.files) == sorted(old.files)
        assert all(np.array_equal(new[k], old[k]) and new[k].dtype == old[k].dtype for k in old.files)


def _copy(tmp_path: Path) -> tuple[Path, dict]:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "lm" / "runs" / "tied" / "seed0", run)
    return run, json.loads((run / "analysis" / "diagnostics.json").read_text())


def test_another_version_is_not_analysed(tmp_path: Path):
    run, raw = _copy(tmp_path)
    raw["version"] = 99
    (run / "analysis" / "diagnostics.json").write_text(json.dumps(raw))
    assert run_diagnostics.read(run) is None


def test_files_of_the_first_version_1_code_are_read(tmp_path: Path):
    """The first analyses of version 1 had no translation, captioning or timing entries."""
    run, raw = _copy(tmp_path)
    for key in ("translation", "captioning", "seconds"):
        del raw[key]
    (run / "analysis" / "diagnostics.json").write_text(json.dumps(raw))
    loaded = run_diagnostics.read(run)
    assert loaded is not None
    diag, _ = loaded
    assert diag.translation is None and diag.captioning is None and diag.seconds is None
    assert "seconds" not in diag.to_json()


def test_a_missing_entry_is_named(tmp_path: Path):
    run, raw = _copy(tmp_path)
    del raw["step0"]["ln_v"]
    (run / "analysis" / "diagnostics.json").write_text(json.dumps(raw))
    with pytest.raises(DataError, match=r"Step0Loss.*ln_v"):
        run_diagnostics.read(run)


def test_scores_a_task_adds_are_kept_after_the_known_ones():
    raw = {"bleu": 30.0, "chrf": 55.0, "ter": 60.0, "sentences": 10}
    scores = TranslationScores.from_json(raw)
    assert scores.extra == {"ter": 60.0} and scores.sentences == 10 and scores.lenpen is None
    assert list(scores.to_json()) == ["bleu", "chrf", "sentences", "ter"]


def test_arrays_without_the_required_entries_are_named(tmp_path: Path):
    np.savez_compressed(tmp_path / "arrays.npz", input_norms=np.ones(3))
    with pytest.raises(DataError, match="output_norms"):
        RunArrays.load(tmp_path / "arrays.npz")
