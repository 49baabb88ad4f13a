"""train.optimizer=muon: torch.optim.Muon for the body's 2-D matrices, AdamW for everything else (embedding,
head, positions, norms, biases); the schedule drives both; checkpoints hold both optimizers' state and an
interrupted run resumes bitwise equal to an uninterrupted one (on CPU)."""

from __future__ import annotations

import copy
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
from embtie.training.optim import param_groups
from tiny_runs import TINY_GPT_BODY

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
MUON = [*TINY_GPT_BODY, "train.optimizer=muon", "train.muon_lr=0.02", "train.lr=0.003", "train.eval_every=0",
        "train.checkpoint_every=4", "train.warmup_steps=2", "train.schedule=cosine", "sharing.name=untied",
        "sharing.options.bias=true", "train.weight_decay=0.01", "model.positions=learned",
        "model.bias=true"]  # fmt: skip


def test_the_body_matrices_go_to_muon_and_the_rest_to_adamw(tmp_path):
    cfg = load_config("ptb-gpt-tiny", [*MUON, "train.max_steps=3", "model.dropout=0"])
    t = trainer.Trainer(cfg, tmp_path, runtime.setup("cpu"))
    t.setup()
    m = t.model
    groups = {g["name"]: g for g in t.optimizer.param_groups}
    linears = {id(mod.weight) for mod in m.modules() if isinstance(mod, torch.nn.Linear)}
    assert {id(p) for p in groups["muon"]["params"]} == linears and len(linears) == 4  # qkv, proj, fc, proj
    assert {id(p) for p in groups["embedding"]["params"]} == {id(m.sharing.weight), id(m.sharing.out_weight)}
    assert {id(p) for p in groups["decay"]["params"]} == {id(m.pos.weight)}
    assert groups["muon"]["lr_mult"] == pytest.approx(0.02 / 0.003) and groups["muon"]["nesterov"]
    assert "betas" not in groups["muon"] and groups["embedding"]["betas"] == (0.9, 0.95)

    # one step of the trainer = torch's own Muon and AdamW, each over its groups, with the scheduled lrs
    model = copy.deepcopy(m)
    ref = param_groups(model, cfg.train)
    muon = torch.optim.Muon([g for g in ref if g["name"] == "muon"], lr=0.02, momentum=0.95,
                            adjust_lr_fn="match_rms_adamw")  # fmt: skip
    adamw = torch.optim.AdamW([g for g in ref if g["name"] != "muon"], lr=0.003, betas=(0.9, 0.95), fused=True)
    cpu = torch.device("cpu")
    for _ in range(3):
        step = t.state.step
        lr = t.train_step()
        for opt, peak in ((muon, 0.02), (adamw, 0.003)):
            for g in opt.param_groups:
                g["lr"] = peak * lr / 0.003
        out, _ = t.task.loss(model, t.task.train_batch(0, step, 0, 1, cpu), None)
        out.objective.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.grad_clip)
        muon.step()
        adamw.step()
        muon.zero_grad()
        adamw.zero_grad()
    mine, theirs = dict(t.model.named_parameters()), dict(model.named_parameters())
    assert all(torch.allclose(mine[k], theirs[k], rtol=0, atol=1e-6) for k in theirs)
    assert t.optimizer.param_groups[0]["lr"] == pytest.approx(0.02 * lr / 0.003)  # the schedule drove Muon


def test_an_interrupted_muon_run_resumes_bitwise(tmp_path, monkeypatch):
    cfg = load_config("ptb-gpt-tiny", [*MUON, "train.max_steps=10", "model.dropout=0.1"])
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
    for name in ("model", "optim"):  # the weights, and both optimizers' state (Muon's momentum, Adam's moments)
        a, b = (load_file(str(tmp_path / d / f"checkpoints/step-00000010/{name}.safetensors")) for d in ("ref", "run"))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name
    kinds = {k.split(".", 1)[1] for k in a}
    assert {"momentum_buffer", "exp_avg", "exp_avg_sq"} <= kinds


def test_muon_settings_need_the_muon_optimizer_and_no_fsdp():
    with pytest.raises(ConfigError, match=r"train\.muon_lr is set but train\.optimizer=adamw"):
        load_config("ptb-gpt-tiny", ["train.muon_lr=0.02"])
    with pytest.raises(ConfigError, match=r"use train\.parallel=ddp with muon"):
        load_config("ptb-gpt-tiny", ["train.optimizer=muon", "train.parallel=fsdp"])
