"""tie-untie's re-tie (options retie_at, retie_to): at round(retie_at * total) the two matrices become one
again, E; with retie_to=input E goes on as it was, with average E <- (E + O) / 2 and its Adam moments the
averages of E's and O's; the phase survives a save and load, and a run re-tied mid-way resumes bitwise."""

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

V, D = 24, 8


def _adam_step(s, opt, ids, t):
    opt.zero_grad(set_to_none=True)
    s.loss(torch.tanh(s.embed(ids)), t).backward()
    opt.step()


def _run_to_retie(retie_to: str):
    """Steps 0..5 of 10 (untie at 3, re-tie at 6), then the hook of step 6; returns what was before it."""
    torch.manual_seed(5)
    s = sharing.build("tie-untie", vocab_size=V, dim=D, untie_at=0.3, retie_at=0.6, retie_to=retie_to)
    opt = torch.optim.AdamW(s.parameters(), lr=0.01)
    ids, t = torch.randint(0, V, (16,)), torch.randint(0, V, (16,))
    for step in range(6):
        s.on_train_step(step, 10, opt)
        _adam_step(s, opt, ids, t)
    assert s.is_untied and not s.is_retied and not torch.equal(s.weight, s.out_weight)
    before = {
        "E": s.weight.detach().clone(),
        "O": s.out_weight.detach().clone(),
        "E_state": {k: v.clone() for k, v in opt.state[s.weight].items()},
        "O_state": {k: v.clone() for k, v in opt.state[s.out_weight].items()},
    }
    s.on_train_step(6, 10, opt)  # round(0.6 * 10) = 6
    return s, opt, before, (ids, t)


def test_retie_to_input_keeps_e_and_its_moments_and_drops_o():
    s, opt, before, _ = _run_to_retie("input")
    assert s.is_retied and not s.is_untied and float(s.retied) == 1.0
    assert torch.equal(s.weight, before["E"])
    for k, v in before["E_state"].items():
        assert torch.equal(opt.state[s.weight][k], v), k
    h = torch.randn(3, D)
    assert s.head().weight is s.weight and torch.equal(s.logits(h), h @ s.weight.T)
    s.zero_grad()
    s.loss(torch.randn(5, D), torch.randint(0, V, (5,))).backward()
    assert s.weight.grad is not None and s.out_weight.grad is None  # O is out of the model
    s.on_train_step(9, 10, opt)
    assert s.is_retied  # never untied again


def test_retie_to_average_writes_the_mean_matrix_and_moments():
    s, opt, before, _ = _run_to_retie("average")
    assert torch.allclose(s.weight, (before["E"] + before["O"]) / 2, rtol=0, atol=1e-7)
    for k in ("exp_avg", "exp_avg_sq"):
        expected = (before["E_state"][k] + before["O_state"][k]) / 2
        assert torch.allclose(opt.state[s.weight][k], expected, rtol=0, atol=1e-12), k
    assert torch.equal(opt.state[s.weight]["step"], before["E_state"]["step"])


def test_the_retied_phase_survives_save_and_load():
    s, _, _, _ = _run_to_retie("average")
    loaded = sharing.build("tie-untie", vocab_size=V, dim=D, untie_at=0.3, retie_at=0.6, retie_to="average")
    loaded.load_state_dict(s.state_dict())
    h = torch.randn(4, D)
    assert loaded.is_retied and torch.equal(loaded.logits(h), h @ s.weight.T)
    plain = sharing.build("tie-untie", vocab_size=V, dim=D)
    assert "retied" not in plain.state_dict() and plain.parameter_counts()["fixed"] == 0
    assert loaded.parameter_counts()["fixed"] == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"untie_at": 0.5, "retie_at": 0.5}, "retie_at=0.5 must be after untie_at=0.5"),
        ({"retie_to": "average"}, "retie_to=average needs retie_at"),
        ({"retie_at": 0.9, "retie_to": "average", "factor_rank": 4}, "use retie_to=input"),
        ({"retie_at": 0.9, "retie_to": "output"}, "must be one of: input, average"),
    ],
)
def test_bad_retie_options_are_one_line(options, message):
    with pytest.raises(ConfigError, match=message):
        sharing.build("tie-untie", vocab_size=V, dim=D, **options)


RUN = [
    *TINY_GPT_BODY,
    "sharing.name=tie-untie",
    "sharing.options.untie_at=0.25",
    "sharing.options.retie_at=0.625",
    "sharing.options.retie_to=average",
    "train.max_steps=8",
    "train.checkpoint_every=3",
    "train.keep_checkpoints=5",
    "train.eval_every=0",
]


def test_a_run_resumed_after_the_retie_ends_bitwise_as_the_uninterrupted_one(tmp_path, monkeypatch):
    """Untie at step 2, re-tie at step 5 of 8; restarted from the step-3 checkpoint (untied) and from the
    step-6 one (re-tied), the run ends with bitwise the weights of the uninterrupted one."""
    ref = tmp_path / "ref"
    train(load_config("ptb-gpt-tiny", RUN), ref)
    final = load_file(str(latest(ref) / "model.safetensors"))
    assert float(final["sharing.untied"]) == 1.0 and float(final["sharing.retied"]) == 1.0
    restored: list[str] = []
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
        assert again.keys() == final.keys() and all(torch.equal(again[k], final[k]) for k in final), keep
