"""What every arm of a comparison shares (``comparison.invariants``), what an arm may set alone, and the
optimizer option that reaches nothing (``training.optim.check_reach``): the declarations checked against the
task configs and the docs, and the checks on the specs the CLI cannot easily make (an arm --match made equal
to another)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from torch import nn

from embtie import comparison
from embtie.comparison import CompareSpec, invariants
from embtie.comparison.arms import ArmAdjustment, Matching
from embtie.config import load_config
from embtie.errors import ConfigError
from embtie.tasks.captioning.config import CaptionDataConfig
from embtie.tasks.lm.config import LMDataConfig
from embtie.tasks.translation.config import MTDataConfig
from embtie.training import optim
from tiny_runs import TINY_GPT_BODY

DATA_CONFIGS = (LMDataConfig, MTDataConfig, CaptionDataConfig)
DATA_KEYS = sorted({f"data.{f.name}" for c in DATA_CONFIGS for f in dataclasses.fields(c)})


def _spec(*items: str, **kw) -> CompareSpec:
    parsed = [comparison.parse_strategy(i) for i in items]
    return CompareSpec(preset=kw.pop("preset", "ptb-gpt-tiny"), strategies=[p[0] for p in parsed], seeds=1,
                       variants={p[0]: (p[1], p[2]) for p in parsed if p[2]}, out_dir=Path("unused"), **kw)  # fmt: skip


def test_every_data_key_is_shared_but_the_declared_training_ones():
    per_arm = [k for k in DATA_KEYS if invariants.shared_reason(k) is None]
    assert per_arm == sorted(invariants.PER_ARM_DATA)  # and every per-arm key is a key of some task
    assert len(DATA_KEYS) - len(per_arm) == 44  # shared: the evaluation, vocabulary and corpus keys of three tasks
    assert invariants.shared_reason("train.eval_batches") is not None
    assert all(invariants.shared_reason(k) is None for k in ("train.lr", "train.optimizer", "model.n_layers", "seed"))


def test_an_arm_may_set_training_and_model_keys_of_its_own():
    runs = comparison.plan(_spec("tied", "x=tied:data.batch_size=8:train.lr=0.002:model.mlp_ratio=2"), folders=False)
    x = next(r.cfg for r in runs if r.strategy == "x")
    assert (x.data.batch_size, x.train.lr, x.model.mlp_ratio) == (8, 0.002, 2)


def test_shared_keys_are_named_in_the_docs():
    text = Path("docs/reference.md").read_text(encoding="utf-8")
    missing = [s.pattern for s in invariants.SHARED if f"`{s.pattern}`" not in text]
    missing += [k for k in invariants.PER_ARM_DATA if f"`{k}`" not in text]
    assert not missing, f"docs/reference.md does not name {missing}"


def test_an_arm_that_match_made_equal_to_another_is_refused():
    """--match deepening tied to the depth of a variant whose one difference was its depth: the variant would
    be compared with itself (the CLI refuses the variant's depth first; a spec can still carry it)."""
    spec = _spec("tied", "deep=tied:model.n_layers=4")
    arms = (
        ArmAdjustment("tied", "model.n_layers", 2, 4, 1.0, 0.5),
        ArmAdjustment("deep", "model.n_layers", 4, 4, 1.0, 1.0),
    )
    with pytest.raises(ConfigError, match=r"--match params made deep the same model as tied \(it erased"):
        comparison.plan(dataclasses.replace(spec, matching=Matching("params", 0.05, 1.0, arms)), folders=False)
    with pytest.raises(ConfigError, match=r"cannot set model\.n_layers, which --match params sets for every arm"):
        from embtie.ladder import matching

        matching.match(spec, "params", 0.05)


class Conv1DLike(nn.Module):
    """A layer that is no nn.Linear (transformers' Conv1D keeps a (in, out) matrix of its own)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(4, 4))


def test_muon_reach_counts_the_linear_weights_of_the_body():
    cfg = load_config("ptb-gpt-tiny", ["train.optimizer=muon"])
    body = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 4, bias=False))
    assert optim.muon_reach(body) == (2, 4 * 8 + 8 * 4)
    assert optim.check_reach(body, cfg.train) is None  # every body matrix reached: nothing to say
    with pytest.raises(ConfigError, match=r"train\.optimizer=muon reaches 0 parameters of this model"):
        optim.build_optimizer(nn.Sequential(Conv1DLike(), nn.LayerNorm(4)), cfg.train)
    optim.check_reach(Conv1DLike(), load_config("ptb-gpt-tiny", []).train)  # adamw: nothing to reach


def test_a_partial_muon_reach_is_said_with_its_counts():
    cfg = load_config("ptb-gpt-tiny", ["train.optimizer=muon"])
    body = nn.Sequential(nn.Embedding(16, 4), nn.Linear(4, 8), Conv1DLike(), nn.LSTM(8, 4), nn.Linear(4, 4))
    # reached: the two Linear weights; missed: the Conv1D-like matrix and the LSTM's two; the position-like
    # nn.Embedding is a lookup table, not missed
    assert optim.muon_missed(body) == ["2.weight", "3.weight_ih_l0", "3.weight_hh_l0"]
    note = optim.check_reach(body, cfg.train, "the model of m (gpt)")
    left = 16 + 8 * 4 * 4 + 4 * 4 * 4
    assert note == (f"note: train.optimizer=muon reaches 2 of the 5 body matrices of the model of m (gpt) "
                    f"({4 * 8 + 16} of {4 * 8 + 16 + left:,} elements); the other 3 are not nn.Linear weights and "
                    f"get AdamW (e.g. 2.weight)")


def test_muon_on_embtie_s_gpt_reaches_every_body_matrix():
    from embtie import tasks
    from embtie.tasks.meta_model import build_on_meta

    cfg = load_config("ptb-gpt-tiny", ["train.optimizer=muon", *TINY_GPT_BODY])
    model = build_on_meta(cfg, tasks.get(cfg.task)(cfg))
    assert optim.muon_reach(model)[0] > 0 and optim.check_reach(model, cfg.train) is None
