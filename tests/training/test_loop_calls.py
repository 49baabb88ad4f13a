"""What a user's own training loop calls: ``param_groups`` with keywords (decays, lr multipliers that
survive torch's schedulers), ``on_train_step`` (which warns once when a host's init re-drew a strategy's
own modules), and adaptive's check of a vocabulary's frequency order."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from embtie import sharing
from embtie.config import TrainConfig
from embtie.errors import DataError
from embtie.training.optim import param_groups


class Host(nn.Module):
    """A user's model: its own body and nanoGPT's init, applied to every module it holds."""

    def __init__(self, name: str, **options: object) -> None:
        super().__init__()
        self.sharing = sharing.build(name, vocab_size=40, dim=8, **options)
        self.body = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def init_like_nanogpt(self) -> None:
        def init(m: nn.Module) -> None:
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

        self.apply(init)


def test_param_groups_takes_keywords_for_a_foreign_loop_and_they_override_the_config():
    m = Host("tied", bias=True, logit_scale="learned", logit_scale_lr=10)
    groups = {g["name"]: g for g in param_groups(m, weight_decay=0.1, lr=6e-4)}
    assert {id(p) for p in groups["decay"]["params"]} == {id(m.body.weight)}
    assert {id(p) for p in groups["embedding"]["params"]} == {id(m.sharing.weight)}
    assert {id(p) for p in groups["no_decay"]["params"]} == {
        id(m.body.bias),
        id(m.norm.weight),
        id(m.norm.bias),
        id(m.sharing.bias),
    }
    assert [g["weight_decay"] for g in groups.values()] == [0.0, 0.1, 0.0, 0.0]  # embedding, decay, no_decay, lr_x10
    assert [g["lr"] for g in groups.values()] == pytest.approx([6e-4, 6e-4, 6e-4, 6e-3])
    cfg = TrainConfig(weight_decay=0.3, embedding_weight_decay=0.2)
    assert [g["weight_decay"] for g in param_groups(m, cfg)] == [0.2, 0.3, 0.0, 0.0]
    assert [g["weight_decay"] for g in param_groups(m, cfg, embedding_weight_decay=0.0)] == [0.0, 0.3, 0.0, 0.0]
    assert all("lr" not in g for g in param_groups(m, cfg))  # embtie's trainer sets lr itself (set_lr)


def test_logit_scale_lr_survives_a_torch_scheduler_in_a_foreign_loop():
    m = Host("fixed", logit_scale="learned", logit_scale_lr=30)
    opt = torch.optim.AdamW(param_groups(m, lr=1e-3), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5)
    lrs = {g["name"]: g["lr"] for g in opt.param_groups}
    assert lrs["lr_x30"] == pytest.approx(0.015) and lrs["decay"] == pytest.approx(5e-4)
    before = m.sharing.logit_scale_param.item()
    m.sharing.loss(m.body(torch.randn(16, 8)), torch.randint(0, 40, (16,))).backward()
    opt.step()
    sched.step()
    # Adam's first step moves a scalar by its lr: 30 x 0.5 x 1e-3
    assert abs(m.sharing.logit_scale_param.item() - before) == pytest.approx(0.015, rel=1e-3)


@pytest.mark.parametrize(
    ("name", "options", "module"),
    [
        ("tied-proj", {"proj_init": "identity"}, "proj"),
        ("tied-bert", {}, "dense"),
        ("fixed", {"target_dim": 16}, "proj"),
    ],
)
def test_a_host_init_that_redraws_a_strategy_module_is_warned_once_and_reset_parameters_restores_it(
    name, options, module
):
    torch.manual_seed(0)
    m = Host(name, **options)
    m.init_like_nanogpt()
    with pytest.warns(UserWarning, match=rf"strategy '{name}': the init it drew for {module}.weight was re-drawn"):
        m.sharing.on_train_step(0, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.sharing.on_train_step(1, 10)  # once
        torch.manual_seed(0)
        fresh = Host(name, **options)
        fresh.init_like_nanogpt()
        fresh.sharing.reset_parameters()  # the fix the warning names
        fresh.sharing.on_train_step(0, 10)
        w = getattr(fresh.sharing, module).weight
        if name == "tied-proj":
            assert torch.equal(w, torch.eye(8))  # the identity init is back
        elif name == "tied-bert":
            torch.testing.assert_close(w @ w.T, torch.eye(8))  # orthogonal again
        else:
            assert w.abs().max() > 0.1  # nn.Linear's U(-1/sqrt(8), 1/sqrt(8)), not N(0, 0.02)
        loaded = Host(name, **options)
        loaded.load_state_dict(m.state_dict())  # loaded weights are meant: no warning
        loaded.sharing.on_train_step(0, 10)
        Host(name, **options).sharing.on_train_step(0, 10)  # untouched: no warning


def test_adaptive_checks_a_vocabulary_against_its_counts():
    s = sharing.build("adaptive", vocab_size=12, dim=8, cutoffs=[4, 8])
    counts = torch.tensor([9, 50, 9, 9, 5, 5, 8, 5, 1, 1, 2, 1])  # unsorted within clusters: fine
    s.check_frequency_order(counts)
    counts[9] = 6  # id 9 (cluster 2) more frequent than ids 4, 5, 7 of cluster 1
    with pytest.raises(DataError, match=r"id 9 \(count 6\) in cluster 2 is more frequent than a word of cluster 1"):
        s.check_frequency_order(counts)
    with pytest.raises(DataError, match="counts has 3 entries for a vocabulary of 12 ids"):
        s.check_frequency_order(torch.ones(3))
