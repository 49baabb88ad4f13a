"""``train.compile=true`` trains, and trains what eager trains.

- The language-model and translation presets (tiny sizes) train with inductor, torch.compile's default
  backend, the one users get: the logged losses and the final validation equal the eager run's. Inductor
  alone removed ``ce + 0`` and returned the objective without a gradient (training/objective.py); the
  eager and aot_eager backends the other compile tests use never did.
- Every task's objective (captioning on the tiny Flickr-like fixture too) traces into ONE graph over
  batches of two shapes (``fullgraph=True`` raises at a graph break; aot_eager: seconds, no C++), so the
  compiled step has no break where outputs could alias again, and its gradients are eager's.

Inductor compiles C++ kernels: measured on the shared 2-core machine, the module takes about 50 s once
inductor's cache (/tmp/torchinductor_$USER) holds them (language model 12 s, translation 4 s, the three
traces 33 s), and about 4 minutes on a cold cache (the language model's kernels alone 110 s).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from embtie import tasks
from embtie.config import config_from_dict, load_config
from embtie.training import train
from embtie.training.metrics_log import read_metrics
from embtie.training.objective import Objective, split

COMMON = ["train.threads=1", "train.progress=false", "train.log_every=1", "train.eval_every=0",
          "train.checkpoint_every=0", "train.warmup_steps=1", "model.dropout=0.0"]  # fmt: skip
"""dropout off: inductor draws its own random masks, so only a run without dropout is eager's to the bit."""
LM = ["model.dim=32", "model.n_layers=1", "model.n_heads=2", "model.max_len=16", "data.bptt=16",
      "data.batch_size=4", "data.eval_batch_size=4", "data.train_tokens=4000", "data.valid_tokens=500"]  # fmt: skip
MT = ["data.vocab_size=200", "data.train_pairs=200", "data.valid_pairs=20", "data.max_tokens=256", "model.dim=32",
      "model.enc_layers=1", "model.dec_layers=1", "model.ffn_dim=64", "model.heads=2"]  # fmt: skip


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each case compiles afresh: dynamo's caches (and recompile counts) do not carry over between cases."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _train(preset: str, overrides: list[str], out: Path, compiled: bool) -> tuple[list[float], float]:
    """(the logged training losses, the final validation loss) of a run."""
    cfg = load_config(preset, [*overrides, *COMMON, f"train.compile={str(compiled).lower()}"])
    summary = train(cfg, out)
    return [r["loss"] for r in read_metrics(out) if r["split"] == "train"], summary["valid_loss"]


@pytest.mark.parametrize(
    ("preset", "overrides"),
    [("ptb-gpt-tiny", [*LM, "train.max_steps=3"]), ("multi30k-transformer-small", [*MT, "train.max_steps=1"])],
    ids=["lm", "translation"],
)
def test_a_preset_trains_compiled_with_inductor_as_it_trains_eager(preset, overrides, tmp_path):
    """Translation takes one step: its batches differ in shape, and a second shape recompiles (minutes of
    C++ on a cold cache); the one-graph test below traces two shapes."""
    want_losses, want_valid = _train(preset, overrides, tmp_path / "eager", compiled=False)
    got_losses, got_valid = _train(preset, overrides, tmp_path / "compiled", compiled=True)
    assert all(math.isfinite(x) for x in [*got_losses, got_valid])
    assert got_losses == pytest.approx(want_losses, rel=1e-4)
    assert got_valid == pytest.approx(want_valid, rel=1e-4)  # after the compiled backward's update(s)


def _objective(cfg_overrides: list[str] | None, preset: str | None, flickr: Path | None) -> tuple[Objective, list]:
    """A task's Objective at its initial weights and its first two training batches (of different shapes,
    except for the language model's fixed windows)."""
    if flickr is not None:
        from captioning_data import caption_cfg

        cfg = config_from_dict(caption_cfg(flickr))
    else:
        assert preset is not None and cfg_overrides is not None
        cfg = load_config(preset, [*cfg_overrides, *COMMON])
    torch.manual_seed(0)
    task = tasks.get(cfg.task)(cfg)
    model = task.build_model()
    batches = [task.train_batch(0, i, 0, 1, torch.device("cpu")) for i in range(2)]
    return Objective(model, task), batches


def _step(objective: torch.nn.Module, model: torch.nn.Module, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    losses, _, _ = objective(batch, None)
    obj, ce = split(losses)
    obj.backward()
    return torch.stack((obj.detach(), ce)), {
        n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None
    }


@pytest.mark.parametrize("task", ["lm", "translation", "captioning"])
def test_every_tasks_objective_traces_into_one_graph_with_eagers_gradients(task, request):
    if task == "captioning":
        objective, batches = _objective(None, None, request.getfixturevalue("flickr"))
    else:
        preset, overrides = ("ptb-gpt-tiny", LM) if task == "lm" else ("multi30k-transformer-small", MT)
        objective, batches = _objective(overrides, preset, None)
    compiled = torch.compile(objective, fullgraph=True, backend="aot_eager")  # a graph break raises
    objective.train()
    for batch in batches:
        want, want_grads = _step(objective, objective.model, batch)
        got, got_grads = _step(compiled, objective.model, batch)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        assert got_grads.keys() == want_grads.keys() and got_grads
        for key, w in want_grads.items():
            torch.testing.assert_close(got_grads[key], w, rtol=1e-4, atol=1e-6, msg=lambda m, k=key: f"{k}: {m}")
