"""bench/confirm.py: a verdict re-run on fresh seeds reads confirmed when the fresh folder agrees and
contradicted when its difference goes the other way; the pooled column puts each folder's machine in a
block (here the default job's own folder, and a copy whose untied runs are made 20% worse)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench.confirm import confirm

JOB = Path(__file__).resolve().parents[2] / "results" / "default-job" / "make-run"


def _copy(tmp: Path, name: str, untied_factor: float) -> Path:
    out = tmp / name
    out.mkdir()
    saved = json.loads((JOB / "results.json").read_text(encoding="utf-8"))
    for row in saved["rows"]:
        if row["strategy"] == "untied":
            row["valid_ppl"] *= untied_factor
    (out / "results.json").write_text(json.dumps(saved), encoding="utf-8")
    return out


def test_fresh_folders_confirm_or_contradict_and_pool(tmp_path):
    same, worse = _copy(tmp_path, "same", 1.0), _copy(tmp_path, "worse", 1.2)
    table = confirm(JOB, [same]).splitlines()
    untied = next(line for line in table if line.startswith("| untied |"))
    assert "better (-9.14, 5 pairs): confirmed" in untied and "| better, -9.14 [" in untied
    table = confirm(JOB, [same, worse]).splitlines()
    untied = next(line for line in table if line.startswith("| untied |"))
    loginit = next(line for line in table if line.startswith("| tied-loginit |"))
    assert ": contradicted" in untied and "10 pairs, 2 machines" in untied
    assert loginit.count(": confirmed") == 2
    shutil.rmtree(tmp_path / "same")
