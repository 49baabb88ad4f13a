"""Per-table optimizer settings (modded-nanogpt's param_table): the input embedding and a separate head each
get their own peak lr, betas and weight decay, and they reach the optimizer's groups; a tied matrix takes the
embedding's settings, and a head setting for a model without a separate head is refused in one line."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from embtie import sharing
from embtie.config import TrainConfig, load_config
from embtie.errors import ConfigError
from embtie.training.optim import build_optimizer, param_groups, set_lr
from embtie.training.table_settings import TableSettings

V, D = 30, 8


class Host(nn.Module):
    def __init__(self, name: str, **options: object) -> None:
        super().__init__()
        self.sharing = sharing.build(name, vocab_size=V, dim=D, **options)
        self.body = nn.Linear(D, D)

    def loss(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.sharing.loss(self.body(self.sharing.embed(ids)), targets)


RECIPE = TrainConfig(
    lr=1e-3,
    weight_decay=0.1,
    embedding_lr=3e-3,
    embedding_betas=[0.8, 0.9],
    embedding_weight_decay=0.0,
    head_lr=2e-4,
    head_betas=[0.5, 0.99],
    head_weight_decay=0.05,
)


def test_the_settings_reach_the_optimizer_groups_of_an_untied_model():
    torch.manual_seed(0)
    m = Host("untied")
    opt = build_optimizer(m, RECIPE)
    set_lr(opt, 0.5 * RECIPE.lr)  # a schedule at half the peak scales every table's lr alike
    groups = {g["name"]: g for g in opt.param_groups}
    assert [p is m.sharing.weight for p in groups["embedding"]["params"]] == [True]
    assert [p is m.sharing.out_weight for p in groups["head"]["params"]] == [True]
    assert groups["embedding"]["lr"] == pytest.approx(1.5e-3) and groups["head"]["lr"] == pytest.approx(1e-4)
    assert groups["decay"]["lr"] == pytest.approx(5e-4)
    assert tuple(groups["embedding"]["betas"]) == (0.8, 0.9) and tuple(groups["head"]["betas"]) == (0.5, 0.99)
    assert tuple(groups["decay"]["betas"]) == (0.9, 0.95)  # train.betas
    assert [groups[k]["weight_decay"] for k in ("embedding", "head", "decay")] == [0.0, 0.05, 0.1]
    # the first AdamW step moves every entry with a gradient by its group's lr (the sign of the gradient)
    before = {k: groups[k]["params"][0].detach().clone() for k in ("embedding", "head")}
    ids = torch.arange(V).view(3, 10)
    m.loss(ids, ids.roll(1)).backward()
    opt.step()
    for k, lr, wd in (("embedding", 1.5e-3, 0.0), ("head", 1e-4, 0.05)):
        p = groups[k]["params"][0].detach()
        update = before[k] - p - lr * wd * before[k]  # decoupled decay lr * wd * p, then lr * sign(gradient)
        assert torch.allclose(update.abs(), torch.full_like(update, lr), rtol=1e-3), k


def test_head_settings_default_to_the_embedding_ones_and_then_o_stays_in_the_embedding_group():
    m = Host("untied")
    cfg = TrainConfig(embedding_lr=3e-3, embedding_weight_decay=0.01)
    groups = {g["name"]: g for g in param_groups(m, cfg)}
    assert "head" not in groups  # same settings: the groups (and checkpoints) of earlier versions
    assert {id(p) for p in groups["embedding"]["params"]} == {id(m.sharing.weight), id(m.sharing.out_weight)}
    assert groups["embedding"]["lr_mult"] == pytest.approx(3.0)


def test_a_tied_matrix_takes_the_embedding_settings_and_head_settings_are_refused():
    m = Host("tied")
    groups = {g["name"]: g for g in param_groups(m, TrainConfig(embedding_lr=3e-3, embedding_betas=[0.8, 0.9]))}
    assert [p is m.sharing.weight for p in groups["embedding"]["params"]] == [True]
    assert groups["embedding"]["lr_mult"] == pytest.approx(3.0) and groups["embedding"]["betas"] == (0.8, 0.9)
    with pytest.raises(ConfigError, match=r"train\.head_lr is set but model Host has no separate learned head"):
        param_groups(m, TrainConfig(head_lr=1e-2))
    with pytest.raises(ConfigError, match=r"param_groups\(head=\.\.\.\) is given but model Host has no separate"):
        param_groups(m, head=TableSettings(lr_mult=2.0))  # a loop of one's own, without a TrainConfig
    for name in ("tied", "l2norm", "fixed"):  # when the config is read, before anything is written
        with pytest.raises(ConfigError, match=f"train.head_betas is set but strategy '{name}' has no separate"):
            load_config("ptb-gpt-tiny", [f"sharing.name={name}", "train.head_betas=[0.5, 0.9]"])
    load_config("ptb-gpt-tiny", ["sharing.name=tie-untie", "train.head_lr=1e-3"])  # O exists from the start


def test_the_head_keyword_of_a_foreign_loop_gives_o_its_own_group():
    m = Host("untied")
    groups = {g["name"]: g for g in param_groups(m, lr=1e-3, head=TableSettings(0.01, 0.5, (0.8, 0.9)))}
    assert [p is m.sharing.out_weight for p in groups["head"]["params"]] == [True]
    assert groups["head"]["lr"] == pytest.approx(5e-4) and groups["head"]["betas"] == (0.8, 0.9)
    assert groups["head"]["weight_decay"] == 0.01 and groups["embedding"]["lr"] == pytest.approx(1e-3)


def test_sgd_refuses_betas():
    with pytest.raises(ConfigError, match=r"train\.embedding_betas is set but train\.optimizer=sgd has no betas"):
        TrainConfig(optimizer="sgd", embedding_betas=[0.8, 0.9])
