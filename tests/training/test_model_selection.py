"""Model selection on a validation metric: the plateau schedule, early stopping and the best checkpoint
(unit rules and real runs), resumed exactly after an interruption; BLEU as the monitored metric."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from embtie.config import TrainConfig, load_config
from embtie.errors import ConfigError
from embtie.rundir.loading import load_for_decoding
from embtie.training import monitor, train, trainer
from embtie.training.metrics_log import read_metrics
from embtie.training.state import TrainState
from tiny_runs import TINY_GPT_BODY

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
LM = [
    *TINY_GPT_BODY,
    "train.eval_every=2",
    "train.checkpoint_every=4",
    "train.max_steps=40",
    "train.schedule=plateau",
    "train.plateau_patience=2",
    "train.decay_factor=0.5",
    "train.warmup_steps=0",
    "train.lr=0.3",  # high enough that the validation loss stops improving within 40 steps
]


def test_plateau_and_early_stopping_rules():
    tc = TrainConfig(schedule="plateau", plateau_patience=2, decay_factor=0.5, early_stop=5)
    st = TrainState()
    seq = [3.0, 2.0, 2.5, 2.1, 1.9, 2.0, 2.0, 2.0, 2.0, 2.0]
    out = [monitor.update(st, v, i, tc) for i, v in enumerate(seq)]
    assert [d.improved for d in out] == [True, True, False, False, True, False, False, False, False, False]
    assert [d.decayed for d in out] == [False, False, False, True, False, False, True, False, True, False]
    assert [d.stop for d in out] == [False] * 9 + [True]
    assert st.lr_scale == 0.125 and st.best_metric == 1.9 and st.best_metric_step == 4 and st.stopped_early
    bleu = TrainConfig(monitor="bleu")
    st = TrainState()
    assert [monitor.update(st, v, i, bleu).improved for i, v in enumerate([10.0, 12.0, 11.0])] == [True, True, False]


def test_bleu_monitor_is_refused_for_language_models():
    with pytest.raises(ConfigError, match=r"train.monitor=bleu .* choose one of: loss"):
        load_config("ptb-gpt-tiny", ["train.monitor=bleu"])


def test_plateau_run_decays_stops_early_and_keeps_the_best(tmp_path):
    summary = train(load_config("ptb-gpt-tiny", [*LM, "train.plateau_patience=1", "train.early_stop=2"]), tmp_path)
    valid = [r for r in read_metrics(tmp_path) if r["split"] == "valid"]
    lrs = [r["lr"] for r in read_metrics(tmp_path) if r["split"] == "train" and r["step"] > 0]
    assert summary["stopped_early"] and summary["steps"] < 40 and summary["steps"] == valid[-1]["step"]
    assert min(lrs) == pytest.approx(0.3 * 0.5 ** (len(set(lrs)) - 1)) and len(set(lrs)) >= 2
    best = min(valid, key=lambda r: r["loss"])
    info = json.loads((tmp_path / "checkpoints/best/info.json").read_text())
    assert info["step"] == best["step"] == summary["best_metric_step"]
    assert summary["best_metric"] == pytest.approx(best["loss"])
    run = load_for_decoding(tmp_path, "best")
    weights = load_file(str(tmp_path / "checkpoints/best/model.safetensors"))
    assert all(torch.equal(v, run.model.state_dict()[k]) for k, v in weights.items())


def test_plateau_and_early_stop_resume_exactly(tmp_path, monkeypatch):
    cfg = load_config("ptb-gpt-tiny", [*LM, "train.early_stop=6"])
    ref = train(cfg, tmp_path / "ref")
    step = trainer.Trainer.train_step

    def interrupted(self):
        if self.state.step == 13:  # after the checkpoint of step 12, the lr already decayed once
            raise KeyboardInterrupt
        return step(self)

    monkeypatch.setattr(trainer.Trainer, "train_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "run")
    monkeypatch.setattr(trainer.Trainer, "train_step", step)
    again = train(cfg, tmp_path / "run")
    strip = ("elapsed", "tokens_per_s")
    ra, rb = ([{k: v for k, v in r.items() if k not in strip} for r in read_metrics(d)] for d in
              (tmp_path / "ref", tmp_path / "run"))  # fmt: skip
    assert ra == rb
    assert {k: ref[k] for k in ("steps", "best_metric", "stopped_early")} == {
        k: again[k] for k in ("steps", "best_metric", "stopped_early")
    }
    for name in ("best", f"step-{ref['steps']:08d}"):
        a = load_file(str(tmp_path / "ref/checkpoints" / name / "model.safetensors"))
        b = load_file(str(tmp_path / "run/checkpoints" / name / "model.safetensors"))
        assert all(torch.equal(a[k], b[k]) for k in a), name


def test_bleu_monitor_on_a_translation_run(tmp_path):
    overrides = ["data.vocab_size=200", "data.train_pairs=400", "data.valid_pairs=40", "data.max_tokens=512",
                 "model.dim=32", "model.enc_layers=1", "model.dec_layers=1", "model.ffn_dim=64", "model.heads=2",
                 "train.max_steps=6", "train.eval_every=2", "train.threads=1", "train.progress=false",
                 "train.monitor=bleu", "train.warmup_steps=2"]  # fmt: skip
    summary = train(load_config("multi30k-transformer-small", overrides), tmp_path)
    valid = [r for r in read_metrics(tmp_path) if r["split"] == "valid"]
    assert all("bleu" in r for r in valid) and len(valid) >= 3
    assert summary["best_metric"] == max(r["bleu"] for r in valid)
    assert (tmp_path / "checkpoints/best/model.safetensors").is_file()
