"""``tied-gradscale`` (Lopardo et al. 2026) and ``tie-untie`` (modded-nanogpt PR #178): formulas, exact
gradient scaling, the switch with its optimizer moments, save/load, and a training run interrupted
before / after the switch that resumes bitwise."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors.torch import load_file

from embtie import sharing
from embtie.config import load_config
from embtie.errors import ConfigError
from embtie.rundir.checkpoints import latest
from embtie.training import resume, train
from tiny_runs import TINY_GPT_BODY

V, D = 13, 6


def test_gradscale_forward_is_tied_and_gradient_is_scaled_exactly():
    k = 3.5
    torch.manual_seed(0)
    s = sharing.build("tied-gradscale", vocab_size=V, dim=D, input_grad_scale=k).double()
    ref = sharing.build("tied", vocab_size=V, dim=D).double()
    ref.load_state_dict(s.state_dict())
    ids = torch.randint(0, V, (4, 5))
    noise = torch.randn(4, 5, D, dtype=torch.float64)
    assert torch.equal(s.embed(ids), ref.embed(ids)) and torch.equal(s.logits(noise), ref.logits(noise))

    def loss_of(strategy, x_in, w_out):
        h = torch.tanh(x_in + noise)  # a toy body between the input and output sides
        return strategy.head().__class__(weight=w_out).logits(h).logsumexp(-1).mean() - h.sum() * 0.1

    # reference gradients of the two paths, separately, through the plain tied strategy
    x = ref.embed(ids)
    g_in = torch.autograd.grad(loss_of(ref, x, ref.weight.detach()), ref.weight)[0]
    g_out = torch.autograd.grad(loss_of(ref, x.detach(), ref.weight), ref.weight)[0]
    (g,) = torch.autograd.grad(loss_of(s, s.embed(ids), s.weight), s.weight)
    torch.testing.assert_close(g, k * g_in + g_out, rtol=1e-12, atol=1e-14)
    assert float((g_in.abs() > 0).float().sum()) > 0 and float((g_out.abs() > 0).float().sum()) > 0
    with pytest.raises(ConfigError, match="input_grad_scale"):
        sharing.build("tied-gradscale", vocab_size=V, dim=D, input_grad_scale=-1)


def test_gradscale_loss_gradient():
    """With the strategy's own loss: dL/dE = k dL/dE|input + dL/dE|output (k = 0 leaves the output's)."""
    torch.manual_seed(1)
    ids, t = torch.randint(0, V, (9,)), torch.randint(0, V, (9,))
    grads = {}
    for k in (0.0, 1.0, 4.0):
        s = sharing.build("tied-gradscale", vocab_size=V, dim=D, input_grad_scale=k).double()
        with torch.no_grad():
            s.weight.copy_(torch.linspace(-1, 1, V * D, dtype=torch.float64).reshape(V, D).sin())
        s.loss(torch.tanh(s.embed(ids)), t, impl="chunked", chunk_size=4).backward()
        grads[k] = s.weight.grad
    g_out, g_in = grads[0.0], grads[1.0] - grads[0.0]
    torch.testing.assert_close(grads[4.0], 4.0 * g_in + g_out, rtol=1e-10, atol=1e-13)


def _adam_step(s, opt, ids, t):
    opt.zero_grad(set_to_none=True)
    s.loss(torch.tanh(s.embed(ids)), t).backward()
    opt.step()


def test_tie_untie_switch_copies_matrix_and_moments():
    torch.manual_seed(2)
    s = sharing.build("tie-untie", vocab_size=V, dim=D, untie_at=0.5)
    opt = torch.optim.AdamW(s.parameters(), lr=0.01)
    ids, t = torch.randint(0, V, (16,)), torch.randint(0, V, (16,))
    h = torch.randn(3, D)
    for step in range(4):
        s.on_train_step(step, 10, opt)
        assert not s.is_untied
        torch.testing.assert_close(s.logits(h), h @ s.weight.T)
        _adam_step(s, opt, ids, t)
    assert s.out_weight not in opt.state  # no gradient while tied: no moments either
    s.on_train_step(5, 10, opt)  # round(0.5 * 10) = 5
    assert s.is_untied and float(s.untied) == 1.0
    assert torch.equal(s.out_weight, s.weight)
    for key, value in opt.state[s.weight].items():
        assert torch.equal(opt.state[s.out_weight][key], value), key
        assert opt.state[s.out_weight][key] is not value
    _adam_step(s, opt, ids, t)
    assert not torch.equal(s.out_weight, s.weight)
    torch.testing.assert_close(s.logits(h), h @ s.out_weight.T)
    s.zero_grad()
    s.loss(torch.randn(5, D), torch.randint(0, V, (5,))).backward()
    assert s.weight.grad is None and s.out_weight.grad is not None  # the output side reaches only O


@pytest.mark.parametrize("options", [{}, {"factor_rank": 3, "bias": True}])
def test_tie_untie_save_load_keeps_the_phase(options):
    torch.manual_seed(3)
    s = sharing.build("tie-untie", vocab_size=V, dim=D, **options)
    s.untie()
    with torch.no_grad():
        s.out_weight.add_(0.1)
    loaded = sharing.build("tie-untie", vocab_size=V, dim=D, **options)
    assert not loaded.is_untied
    loaded.load_state_dict(s.state_dict())
    h = torch.randn(4, D)
    assert loaded.is_untied and torch.equal(loaded.logits(h), s.logits(h))
    assert s.parameter_counts()["fixed"] == 0


@pytest.mark.parametrize("name", ["tie-untie", "tied-gradscale"])
def test_save_load_round_trip(name):
    torch.manual_seed(4)
    s = sharing.build(name, vocab_size=V, dim=D, token_temperature=True, z_loss=1e-3, factor_rank=2)
    with torch.no_grad():
        for p in s.parameters():
            p.add_(0.05)
    torch.manual_seed(99)
    loaded = sharing.build(name, vocab_size=V, dim=D, token_temperature=True, z_loss=1e-3, factor_rank=2)
    loaded.load_state_dict(s.state_dict())
    h, t = torch.randn(5, D), torch.randint(0, V, (5,))
    assert torch.equal(loaded.logits(h), s.logits(h)) and torch.equal(loaded.loss(h, t), s.loss(h, t))


RUN = [
    *TINY_GPT_BODY,
    "sharing.name=tie-untie",
    "sharing.options.untie_at=0.5",
    "train.max_steps=8",
    "train.checkpoint_every=3",
    "train.keep_checkpoints=5",
    "train.eval_every=0",
]


def test_tie_untie_training_resumes_bitwise_across_the_switch(tmp_path, monkeypatch):
    """A run untying at step 4 of 8, restarted from its step-3 checkpoint (before the switch) and from
    its step-6 one (after it), ends with bitwise the weights of the uninterrupted run; O learned
    separately from E after the switch."""
    cfg = load_config("ptb-gpt-tiny", RUN)
    ref = tmp_path / "ref"
    train(cfg, ref)
    final = load_file(str(latest(ref) / "model.safetensors"))
    e, o = final["sharing.weight"], final["sharing.out_weight"]
    assert float(final["sharing.untied"]) == 1.0 and not torch.equal(e, o)
    restored = []
    real_restore = resume.restore
    monkeypatch.setattr(resume, "restore", lambda ckpt, *a: restored.append(ckpt.name) or real_restore(ckpt, *a))
    for keep in ("step-00000003", "step-00000006"):
        run = tmp_path / keep
        shutil.copytree(ref, run)
        for ckpt in (run / "checkpoints").iterdir():
            if ckpt.name.startswith("step-") and ckpt.name > keep:
                shutil.rmtree(ckpt)
        (run / "summary.json").unlink()
        train(load_config("ptb-gpt-tiny", RUN), run)
        assert restored[-1] == keep, "the run must resume from the kept checkpoint, not start over"
        again = load_file(str(latest(run) / "model.safetensors"))
        assert again.keys() == final.keys()
        for k in final:
            assert torch.equal(again[k], final[k]), (keep, k)
