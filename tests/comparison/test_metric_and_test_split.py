"""`embtie compare --metric bpb --test` on a user's raw text: bits per byte decide, the test split is
evaluated once per run after training and its verdicts stand beside the validation ones (labelled, same
paired tests), and the report is titled after the corpus, tokenizer and vocabulary."""

from __future__ import annotations

import json

import pytest

from embtie import cli, metrics
from embtie.errors import ConfigError
from raw_corpus import raw_corpus

TINY = ["model.dim=16", "model.n_layers=1", "model.n_heads=2", "model.max_len=16", "data.bptt=16",
        "data.batch_size=4", "data.eval_batch_size=4", "train.max_steps=6", "train.warmup_steps=0",
        "train.eval_every=3", "train.checkpoint_every=0", "train.threads=1", "data.vocab_size=300"]  # fmt: skip


def test_metric_names():
    def key(name: str) -> str:
        return metrics.chosen(name).key

    assert key("bpb") == "valid_bpb" and key("ppl") == "valid_ppl" and key("bleu") == "bleu"
    assert metrics.primary([], None).key == "valid_ppl" and metrics.primary([], "bpb").key == "valid_bpb"
    with pytest.raises(ConfigError, match="--metric .test_ppl. is not one of " + ", ".join(metrics.BY_FLAG)):
        key("test_ppl")  # the test split never decides


def test_bpb_decides_and_test_verdicts_stand_beside(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBTIE_CACHE", str(tmp_path / "cache"))
    files = raw_corpus(tmp_path / "corpus", train=800, valid=80, test=80)
    out = tmp_path / "cmp"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--out", str(out),
            "--metric", "bpb", "--test", "--no-progress", *TINY,
            *(f"data.{s}_file={p}" for s, p in files.items())]  # fmt: skip
    assert cli.main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["metric"] == "valid_bpb"
    assert {"valid_ppl", "valid_bpb", "test_ppl", "test_bpb"} <= set(res["verdicts"])
    assert res["verdicts"]["test_bpb"]["label"] == "test bits per byte"
    for row in res["rows"]:
        test = json.loads((out / "runs" / row["strategy"] / f"seed{row['seed']}" / "test.json").read_text())
        assert row["test_ppl"] == test["ppl"] and row["test_bpb"] == test["bpb"] and test["test_file"] is None
        assert row["valid_bpb"] > 0 and test["tokens"] > 0
    md = (out / "report.md").read_text()
    title = md.splitlines()[0]
    assert title == "# embtie comparison: corpus/train.txt, BPE subwords of 300 pieces, V = " \
        f"{res['diagnostics'][0]['vocab_size']:,} (ptb-gpt-tiny)"  # fmt: skip
    assert "Baseline `tied`: bits per byte" in md and "On the test split (reported beside validation, never used" in md
    assert "dataset: null" in (out / "runs/tied/seed0/config.yaml").read_text()
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("runs/*/*/test.json")}
    assert cli.main(argv) == 0  # finished, analysed and tested: nothing is evaluated again
    assert {p: p.stat().st_mtime_ns for p in out.glob("runs/*/*/test.json")} == stamps
