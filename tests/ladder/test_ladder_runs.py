"""The commands end to end, as smoke tests (``EMBTIE_CHEAP``: 3 steps per run, one seed): a matched comparison
trains the deepened arms and its report opens with the adjustment; a ladder trains each rung in its own
folder, writes ladder.json and its report, and a second run resumes (trains nothing)."""

from __future__ import annotations

import json

import yaml

from embtie.cli import main


def test_a_matched_comparison_trains_the_deepened_arms(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBTIE_CHEAP", "1")
    out = tmp_path / "matched"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--match", "params", "--no-progress",
            "--out", str(out), "train.threads=1"]  # fmt: skip
    assert main(argv) == 0
    depth = {s: yaml.safe_load((out / "runs" / s / "seed0" / "config.yaml").read_text())["model"]["n_layers"]
             for s in ("tied", "untied")}  # fmt: skip
    assert depth == {"tied": 9, "untied": 2}
    report = (out / "report.md").read_text()
    assert report.index("## Matched arms") < report.index("\n## ", report.index("## Matched arms") + 5)
    assert "| tied | model.n_layers 2 → 9 |" in report
    assert "--match params" in json.loads((out / "results.json").read_text())["command"]


def test_a_ladder_trains_each_rung_in_its_folder_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBTIE_CHEAP", "1")
    out = tmp_path / "ladder"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--ladder", "model.n_layers=1,2",
            "--no-progress", "--out", str(out), "train.threads=1"]  # fmt: skip
    assert main(argv) == 0
    for layers in (1, 2):
        cfg = yaml.safe_load(
            (out / "rungs" / f"n_layers-{layers}" / "runs" / "untied" / "seed0" / "config.yaml").read_text()
        )
        assert cfg["model"]["n_layers"] == layers
    data = json.loads((out / "ladder.json").read_text())
    assert [r["value"] for r in data["rungs"]] == ["1", "2"] and (out / "report.md").is_file()
    summaries = sorted(out.glob("rungs/*/runs/*/seed*/summary.json"))
    stamps = [p.stat().st_mtime_ns for p in summaries]
    assert len(summaries) == 4
    assert main(argv) == 0
    assert [p.stat().st_mtime_ns for p in summaries] == stamps  # every run found finished, none trained again
