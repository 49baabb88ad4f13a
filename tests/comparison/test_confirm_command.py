"""`embtie confirm`: a finished comparison's design is re-run on fresh seeds (past every seed the original
used, or --first-seed) with the same arms, baseline and overrides, and each verdict is said confirmed,
contradicted or undecided; --report-only reports folders already run; bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

from embtie import cli
from tiny_runs import TINY_GPT_BODY

TINY = [*TINY_GPT_BODY, "train.max_steps=6", "train.eval_every=6", "train.eval_batches=2", "train.checkpoint_every=0"]
WORDS = ("confirmed", "contradicted", "undecided")


def _original(tmp_path: Path) -> Path:
    out = tmp_path / "orig"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--analysis", "none",
            "--margin", "valid_ppl=50%", "--out", str(out), "--no-progress", *TINY]  # fmt: skip
    assert cli.main(argv) == 0
    return out


def test_fresh_seeds_rerun_the_design_and_each_verdict_is_judged(tmp_path, capsys):
    orig = _original(tmp_path)
    fresh = tmp_path / "fresh"
    capsys.readouterr()
    assert cli.main(["confirm", str(orig), "--out", str(fresh)]) == 0
    printed = capsys.readouterr().out
    before = json.loads((orig / "design.json").read_text())["design"]
    after = json.loads((fresh / "design.json").read_text())["design"]
    # the same design on seeds 2-3 (the original used 0-1): only the first seed differs
    assert after["first_seed"] == 2 and {k: v for k, v in after.items() if k != "first_seed"} == {
        k: v for k, v in before.items() if k != "first_seed"}
    assert after["margins"]["valid_ppl"] == "50%" and after["overrides"] == before["overrides"]
    seeds = sorted({(r["strategy"], r["seed"]) for r in json.loads((fresh / "results.json").read_text())["rows"]})
    assert seeds == [("tied", 2), ("tied", 3), ("untied", 2), ("untied", 3)]
    row = next(line for line in printed.splitlines() if line.startswith("| untied |"))
    assert row.count("2 pairs") == 3 and any(f": {w} |" in row for w in WORDS) and "2 pairs, 1 machine |" in row
    assert "--first-seed 2" in printed and printed.strip().splitlines()[-1].startswith(f"{fresh} (")
    # --report-only reads the same folders again, trains nothing, prints the same table
    report = tmp_path / "confirmation.md"
    assert cli.main(["confirm", str(orig), str(fresh), "--report-only", "--write", str(report)]) == 0
    table = capsys.readouterr().out
    assert table.strip() == report.read_text().strip() and row in table


def _one_line_error(capsys, argv: list[str], *words: str) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("embtie confirm: error:"), err
    assert all(w in err for w in words), err


def test_bad_folders_and_seeds_are_refused_in_one_line(tmp_path, capsys):
    _one_line_error(capsys, ["confirm", str(tmp_path / "nowhere"), "--out", str(tmp_path / "f")], "is not a folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(capsys, ["confirm", str(empty), "--out", str(tmp_path / "f")], "has no design.json",
                    "no results.json")  # fmt: skip
    orig = _original(tmp_path)
    _one_line_error(capsys, ["confirm", str(orig), "--out", str(tmp_path / "f"), "--first-seed", "1"],
                    "re-use seeds the original used (1...1)", "--first-seed 2")  # fmt: skip
    _one_line_error(capsys, ["confirm", str(orig)], "give --out")
    _one_line_error(capsys, ["confirm", str(orig), str(empty), "--report-only"], f"{empty} has no design.json")
    other = tmp_path / "other"  # a folder of another design: other strategies
    design = json.loads((orig / "design.json").read_text())
    design["design"]["strategies"] = ["tied", "l2norm"]
    other.mkdir()
    (other / "design.json").write_text(json.dumps(design))
    (other / "results.json").write_text((orig / "results.json").read_text())
    _one_line_error(capsys, ["confirm", str(orig), str(other), "--report-only"], "another design",
                    "strategies: tied,untied -> tied,l2norm")  # fmt: skip
