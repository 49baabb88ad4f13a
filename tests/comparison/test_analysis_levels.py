"""`embtie compare --analysis full|light|none`: what each level computes, what the report drops, that a
lighter analysis is deepened without retraining, and the rule of ``auto``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from embtie import cli, comparison
from embtie.comparison.grid import FULL_ANALYSIS_MIN_STEPS
from embtie.config import load_config
from embtie.errors import ConfigError

TINY = [
    "model.dim=16", "model.n_layers=1", "model.n_heads=2", "data.bptt=16", "data.batch_size=4",
    "data.eval_batch_size=4", "data.train_tokens=4000", "data.valid_tokens=1200", "train.max_steps=6",
    "train.warmup_steps=0", "train.eval_every=3", "train.log_every=2", "train.checkpoint_every=0", "train.threads=1",
]  # fmt: skip


def test_auto_is_full_from_the_step_threshold_and_light_below():
    short = load_config("ptb-gpt-tiny", ["train.max_steps=40"])
    long = load_config("ptb-gpt-tiny", [f"train.max_steps={FULL_ANALYSIS_MIN_STEPS}"])
    uncapped = load_config("ptb-gpt-tiny", ["train.max_steps=null", "train.epochs=1"])
    level = comparison.analysis_level
    assert (level("auto", short), level("auto", long), level("auto", uncapped)) == ("light", "full", "full")
    assert level("none", long) == "none" and level("full", short) == "full"
    with pytest.raises(ConfigError, match="--analysis 'most' is not one of auto, full, light, none"):
        level("most", short)


def _compare(out, level: str, progress: bool = False) -> tuple[dict, str]:
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--out", str(out),
            *([] if progress else ["--no-progress"]), "--analysis", level, *TINY]  # fmt: skip
    assert cli.main(argv) == 0
    return json.loads((out / "results.json").read_text()), (out / "report.md").read_text()


def test_levels_drop_their_sections_and_deepen_without_retraining(tmp_path, capsys):
    out = tmp_path / "cmp"
    res, md = _compare(out, "none")
    assert all(d["valid"] is None and d["row_updates"] is None and d["wordsim"] is None for d in res["diagnostics"])
    assert res["bootstrap"] == {}  # no per-unit validation: no bootstrap over units
    assert set(res["verdicts"]["valid_ppl"]["decisions"]) == {"untied"}  # the seeds' verdict stays
    assert "--analysis none" in md and "How often each row" not in md and "Word similarity" not in md
    trained = {p: p.stat().st_mtime for p in out.glob("runs/*/*/summary.json")}

    capsys.readouterr()
    res, md = _compare(out, "light", progress=True)
    said = capsys.readouterr()
    said = said.out + said.err  # the progress lines say what is done to each run: analysed, not trained
    assert "[1/4] analysing tied seed 0 -> " in said and "training" not in said and "resuming" not in said, said
    assert {p: p.stat().st_mtime for p in out.glob("runs/*/*/summary.json")} == trained  # analysed, not retrained
    assert all(d["valid"]["units"] > 0 and d["row_updates"] is None for d in res["diagnostics"])
    assert 0 < res["bootstrap"]["valid_ppl"]["untied"]["p_value"] <= 1 and "tests" not in res
    assert "How often each row" not in md and "Word similarity" not in md and res["update_dynamics"] == []

    res, md = _compare(out, "full")
    assert {p: p.stat().st_mtime for p in out.glob("runs/*/*/summary.json")} == trained
    assert all(d["row_updates"]["batches"] > 0 for d in res["diagnostics"])
    assert "How often each row" in md and "Word similarity" in md and res["update_dynamics"]
    # a full analysis covers a lighter request: nothing is analysed again
    before = {p: p.stat().st_mtime for p in out.glob("runs/*/*/analysis/diagnostics.json")}
    _compare(out, "light")
    assert {p: p.stat().st_mtime for p in out.glob("runs/*/*/analysis/diagnostics.json")} == before


def _own_text(folder, monkeypatch) -> list[str]:
    """train/valid.txt from PTB's validation text, and a data root without the word-similarity files."""
    lines = (Path(os.environ["EMBTIE_DATA"]) / "ptb" / "ptb.valid.txt").read_text(encoding="utf-8").splitlines()
    (folder / "train.txt").write_text("\n".join(lines[:600]) + "\n", encoding="utf-8")
    (folder / "valid.txt").write_text("\n".join(lines[600:660]) + "\n", encoding="utf-8")
    (folder / "empty-data-root").mkdir()
    monkeypatch.setenv("EMBTIE_DATA", str(folder / "empty-data-root"))
    monkeypatch.setenv("EMBTIE_CACHE", str(folder / "cache"))
    return [f"data.train_file={folder / 'train.txt'}", f"data.valid_file={folder / 'valid.txt'}"]


@pytest.mark.parametrize(
    ("tokenizer", "line"),
    [
        ("bpe", "Word similarity skipped: the output vocabulary is not English words (subword pieces"),
        ("word", "Word similarity skipped: EN-SIMLEX-999.txt, EN-MEN-TR-3k.txt, EN-MTurk-771.txt, "
                 "EN-WS-353-ALL.txt not found under the data root (`embtie data get wordsim` brings them)."),
    ],
)  # fmt: skip
def test_a_full_analysis_skips_word_similarity_it_cannot_compute_with_one_line(
    tmp_path, monkeypatch, capsys, tokenizer, line
):
    """Issue 52: word similarity on subword pieces is meaningless, and without the benchmark files (an optional
    data set) it cannot run; either way the comparison finishes and the report says why in one line."""
    files = _own_text(tmp_path, monkeypatch)
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--out", str(tmp_path / "cmp"),
            "--no-progress", "--analysis", "full", *TINY, *files, f"data.tokenizer={tokenizer}",
            *(["data.vocab_size=200"] if tokenizer == "bpe" else []), "data.min_count=1"]  # fmt: skip
    assert cli.main(argv) == 0
    res = json.loads((tmp_path / "cmp" / "results.json").read_text())
    assert all(d["row_updates"]["batches"] > 0 and d["wordsim"] is None for d in res["diagnostics"])
    md = (tmp_path / "cmp" / "report.md").read_text()
    assert line in md and md.count("Word similarity skipped") == 1
    capsys.readouterr()
    assert cli.main(["analyze", str(tmp_path / "cmp" / "runs" / "tied" / "seed0")]) == 0  # `analyze` says it too
    said = json.loads(capsys.readouterr().out.split("\ndiagnostics: ")[0])
    assert said["wordsim"] == {} and said["wordsim_skipped"].startswith("word similarity skipped: ")
