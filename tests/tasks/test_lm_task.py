"""Training a language model end to end on real PTB text: the loss falls, the run directory is
complete, a finished run is not retrained, and `embtie eval` computes token-weighted perplexity."""

import json
import math
import os

import pytest

from embtie.cli import main
from embtie.config import load_config
from embtie.rundir.loading import load_run
from embtie.training import train
from embtie.training.metrics_log import read_metrics
from tiny_runs import TINY_GPT

os.environ.setdefault("EMBTIE_DATA", str(__import__("pathlib").Path(__file__).resolve().parents[3] / "shared/data"))



@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    cfg = load_config("ptb-gpt-tiny", [*TINY_GPT, "train.max_steps=150", "train.eval_every=75"])
    return cfg, out, train(cfg, out)


def test_loss_falls_on_real_ptb(trained):
    _, out, summary = trained
    recs = read_metrics(out)
    train_recs = [r for r in recs if r["split"] == "train"]
    valid = [r for r in recs if r["split"] == "valid"]
    assert [r["step"] for r in train_recs] == list(range(0, 151, 10))
    assert [r["step"] for r in valid] == [75, 150]
    # step 0 is the loss before any update: at least log V for this tied bigram start
    assert train_recs[0]["loss"] == summary["step0_loss"] >= math.log(10000) - 0.5
    # 150 steps of 256 tokens: far below the uniform-distribution perplexity, still falling
    assert summary["valid_ppl"] < 1000 < 10000
    assert valid[1]["ppl"] < valid[0]["ppl"]
    assert train_recs[-1]["loss"] < train_recs[0]["loss"] - 2.5
    assert summary["valid_ppl"] == pytest.approx(math.exp(summary["valid_loss"]))


def test_run_directory_and_summary(trained):
    _, out, summary = trained
    for f in ("config.yaml", "vocab.json", "metrics.jsonl", "summary.json", "checkpoints/latest"):
        assert (out / f).is_file(), f
    for k in ("valid_ppl", "best_valid_ppl", "params_learned", "params_fixed", "tokens_per_s", "steps", "step0_loss"):
        assert summary[k] is not None, k
    assert summary["steps"] == 150 and summary["params_fixed"] == 0
    # tied gpt: 10000 x 32 embedding + 1 block (4 d^2 attention + 8 d^2 MLP) + 3 RMSNorm gains
    assert summary["params_learned"] == 10000 * 32 + 12 * 32 * 32 + 3 * 32
    assert summary["best_valid_ppl"] <= summary["valid_ppl"] + 1e-9
    assert json.loads((out / "summary.json").read_text()) == summary


def test_finished_run_is_not_retrained_and_changed_config_is_refused(trained):
    cfg, out, summary = trained
    before = (out / "metrics.jsonl").read_text()
    assert train(cfg, out) == summary
    assert (out / "metrics.jsonl").read_text() == before
    from embtie.errors import ConfigError

    with pytest.raises(ConfigError, match=r"another config \(train.lr: 0.01 -> 0.02\)"):
        train(cfg.replace(["train.lr=0.02"]), out)


def test_eval_command_writes_token_weighted_perplexity(trained, tmp_path, capsys):
    _, out, summary = trained
    assert main(["eval", str(out)]) == 0
    res = json.loads((out / "eval.json").read_text())["valid"]
    assert res["ppl"] == pytest.approx(summary["valid_ppl"], rel=1e-6)
    assert res["tokens"] == 8192 - 8  # 8 streams; the first token of each is never a target
    assert "valid ppl" in capsys.readouterr().out
    # the test split is not shipped: one line that says to pass --test-file
    assert main(["eval", str(out), "--split", "test"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--test-file" in err
    f = tmp_path / "mine.txt"
    f.write_text(" the company said <unk> \n a zzzunseenword of N \n")
    assert main(["eval", str(out), "--test-file", str(f)]) == 0
    # 10 tokens (8 words + 2 <eos>) in one stream: 9 predicted tokens
    assert json.loads((out / "eval.json").read_text())["test"]["tokens"] == 9


def test_load_run_gives_model_with_its_strategy(trained):
    cfg, out, summary = trained
    run = load_run(out)
    assert run.config == cfg
    assert len(run.task.vocab) == 10000 and run.task.vocab.itos[0] == "the"
    assert run.model.sharing.name == "tied" and not run.model.training
    res = run.task.evaluate(run.model, "valid")
    assert res["ppl"] == pytest.approx(summary["valid_ppl"], rel=1e-6)
