"""comparison.confirmation_report: a verdict re-run on fresh seeds reads confirmed when the fresh folder
agrees and contradicted when its difference goes the other way; the pooled column puts each folder's machine
in a block (here the default job's own folder, and a copy whose untied runs are made 20% worse); a folder of
another design is refused in one line. bench/confirm.py, the old entry point, prints the same table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bench.confirm import main as bench_confirm

from embtie.comparison.confirmation_report import confirmation_report
from embtie.errors import ConfigError

JOB = Path(__file__).resolve().parents[2] / "results" / "default-job" / "make-run"


def _copy(tmp: Path, name: str, untied_factor: float, command: str | None = None) -> Path:
    out = tmp / name
    out.mkdir()
    saved = json.loads((JOB / "results.json").read_text(encoding="utf-8"))
    for row in saved["rows"]:
        if row["strategy"] == "untied":
            row["valid_ppl"] *= untied_factor
    if command is not None:
        saved["command"] = command
    (out / "results.json").write_text(json.dumps(saved), encoding="utf-8")
    return out


def test_fresh_folders_confirm_or_contradict_and_pool(tmp_path):
    same, worse = _copy(tmp_path, "same", 1.0), _copy(tmp_path, "worse", 1.2)
    table = confirmation_report(JOB, [same]).splitlines()
    untied = next(line for line in table if line.startswith("| untied |"))
    assert "better (-9.14, 5 pairs): confirmed" in untied and "| better, -9.14 [" in untied
    assert table[-1].endswith("confirmed: untied, tied-loginit; contradicted: none; undecided: none.")
    table = confirmation_report(JOB, [same, worse]).splitlines()
    untied = next(line for line in table if line.startswith("| untied |"))
    loginit = next(line for line in table if line.startswith("| tied-loginit |"))
    assert ": contradicted" in untied and "10 pairs, 2 machines" in untied
    assert loginit.count(": confirmed") == 2
    assert table[-1].endswith("confirmed: tied-loginit; contradicted: untied; undecided: none.")
    out = tmp_path / "confirmation.md"
    assert bench_confirm([str(JOB), str(same), str(worse), "--out", str(out)]) == 0
    assert out.read_text().splitlines() == table
    shutil.rmtree(tmp_path / "same")


def test_a_folder_of_another_design_is_refused_in_one_line(tmp_path):
    other = _copy(tmp_path, "other", 1.0, command="embtie compare ptb-gpt-tiny --strategies tied,untied --seeds 5")
    with pytest.raises(ConfigError) as err:
        confirmation_report(JOB, [other])
    line = str(err.value)
    assert "\n" not in line and "another design" in line
    assert "strategies: tied,untied,tied-loginit -> tied,untied" in line
