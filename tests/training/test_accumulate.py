"""Gradient accumulation (``train.accumulate``): one optimizer step over k micro-batches uses the mean of
their gradients, an epoch has ceil(batches / k) steps, and a resumed run is exact."""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from embtie import runtime
from embtie.config import load_config
from embtie.errors import ConfigError
from embtie.training import train, trainer
from embtie.training.metrics_log import read_metrics
from embtie.training.optim import build_optimizer, set_lr
from tiny_runs import TINY_GPT_BODY

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
COMMON = [*TINY_GPT_BODY, "train.eval_every=0", "train.checkpoint_every=4", "train.warmup_steps=0"]


def test_one_step_is_the_mean_of_the_micro_batch_gradients(tmp_path):
    cfg = load_config("ptb-gpt-tiny", [*COMMON, "model.dropout=0.0", "train.accumulate=3", "train.max_steps=2",
                                       "train.grad_clip=null"])  # fmt: skip
    t = trainer.Trainer(cfg, tmp_path, runtime.setup("cpu"))
    t.setup()
    model = copy.deepcopy(t.model)
    opt = build_optimizer(model, cfg.train)
    cpu = torch.device("cpu")
    carry = t.task.init_carry(model, 0, 1, cpu)
    for b in range(3):
        out, carry = t.task.loss(model, t.task.train_batch(0, b, 0, 1, cpu), carry)
        (out.objective / 3).backward()
    lr = t.train_step()
    set_lr(opt, lr)
    opt.step()
    mine, ref = dict(t.model.named_parameters()), dict(model.named_parameters())
    assert all(torch.equal(mine[k], ref[k]) for k in ref)
    assert t.state.tokens_seen == 3 * 4 * 16  # three micro-batches of 4 x 16 target tokens


def test_an_epoch_has_ceil_batches_over_k_steps(tmp_path):
    cfg = load_config("ptb-gpt-tiny", [*COMMON, "train.accumulate=3", "train.epochs=1", "train.max_steps=null"])
    t = trainer.Trainer(cfg, tmp_path, runtime.setup("cpu"))
    t.setup()
    assert t.steps_per_epoch == math.ceil(t.batches_per_epoch / 3) and t.total == t.steps_per_epoch


def test_accumulated_run_resumes_exactly(tmp_path, monkeypatch):
    cfg = load_config("ptb-gpt-tiny", [*COMMON, "train.accumulate=2", "train.max_steps=10"])
    train(cfg, tmp_path / "ref")
    step = trainer.Trainer.train_step

    def interrupted(self):
        if self.state.step == 6:  # after the checkpoint of step 4
            raise KeyboardInterrupt
        return step(self)

    monkeypatch.setattr(trainer.Trainer, "train_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "run")
    monkeypatch.setattr(trainer.Trainer, "train_step", step)
    train(cfg, tmp_path / "run")
    strip = ("elapsed", "tokens_per_s")
    ra, rb = ([{k: v for k, v in r.items() if k not in strip} for r in read_metrics(tmp_path / d)] for d in
              ("ref", "run"))  # fmt: skip
    assert ra == rb
    a, b = (load_file(str(tmp_path / d / "checkpoints/step-00000010/model.safetensors")) for d in ("ref", "run"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_accumulate_must_be_positive():
    with pytest.raises(ConfigError, match=r"train.accumulate=0 must be >= 1"):
        load_config("ptb-gpt-tiny", ["train.accumulate=0"])
