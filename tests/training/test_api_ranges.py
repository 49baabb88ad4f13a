"""The Python API refuses what the config keys refuse, with one line naming the argument: ``param_groups``'
keywords and ``TableSettings`` take the ranges of ``train.weight_decay``, ``train.embedding_weight_decay``,
``train.lr`` and ``train.betas`` (schema.check_as reads them from TrainConfig's declarations), and
``on_train_step`` refuses a step outside the training, a training of no steps, and an optimizer that does not
update the strategy (none at all for tie-untie, whose switch copies E's Adam moments)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from embtie import sharing
from embtie.errors import ConfigError
from embtie.training.optim import param_groups
from embtie.training.table_settings import TableSettings


class Host(nn.Module):
    def __init__(self, name: str = "untied") -> None:
        super().__init__()
        self.sharing = sharing.build(name, vocab_size=10, dim=4)
        self.body = nn.Linear(4, 4)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"weight_decay": -1}, r"param_groups\(weight_decay\)=-1 must be >= 0"),
        ({"weight_decay": math.nan}, r"param_groups\(weight_decay\)=nan must be a finite number >= 0"),
        ({"embedding_weight_decay": -0.1}, r"param_groups\(embedding_weight_decay\)=-0.1 must be >= 0"),
        ({"lr": 0}, r"param_groups\(lr\)=0 must be > 0"),
        ({"lr": math.inf}, r"param_groups\(lr\)=inf must be a finite number > 0"),
        ({"head": {"lr_mult": 2}}, r"param_groups\(head=\.\.\.\) must be a TableSettings .*, not dict"),
    ],
)
def test_param_groups_refuses_what_the_config_keys_refuse(keywords, message):
    with pytest.raises(ConfigError, match=f"^{message}"):
        param_groups(Host(), **keywords)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"weight_decay": -0.5}, r"TableSettings\.weight_decay=-0.5 must be >= 0"),
        ({"weight_decay": math.nan}, r"TableSettings\.weight_decay=nan must be a finite number >= 0"),
        ({"lr_mult": -2}, r"TableSettings\.lr_mult=-2 must be > 0"),
        ({"betas": (1.5, 0.9)}, r"TableSettings\.betas=\[1.5, 0.9\] must be a list of 2 numbers in \[0, 1\)"),
        ({"betas": (0.9,)}, r"TableSettings\.betas=\[0.9\] must be a list of 2 numbers in \[0, 1\)"),
    ],
)
def test_table_settings_refuse_what_the_config_keys_refuse(fields, message):
    with pytest.raises(ConfigError, match=f"^{message}"):
        TableSettings(**fields)


def test_valid_table_settings_reach_the_head_group_as_given():
    groups = param_groups(Host(), head=TableSettings(0.1, 2, [0.8, 0.9]), lr=1e-3)
    head = next(g for g in groups if g["name"] == "head")
    assert (head["weight_decay"], head["lr_mult"], head["betas"], head["lr"]) == (0.1, 2.0, (0.8, 0.9), 2e-3)


@pytest.mark.parametrize(
    ("step", "total", "message"),
    [
        (0, 0, r"on_train_step\(total_steps\)=0 must be >= 1"),
        (math.nan, 10, r"on_train_step\(step\)=nan must be an integer >= 0"),
        (-1, 10, r"on_train_step\(step\)=-1 must be >= 0"),
        (10, 10, r"on_train_step\(step=10\) is past the training's 10 steps"),
        (1.5, 10, r"on_train_step\(step\)=1.5 must be an integer >= 0"),
    ],
)
def test_on_train_step_refuses_a_step_outside_the_training(step, total, message):
    host = Host("tied")
    with pytest.raises(ConfigError, match=f"^{message}"):
        host.sharing.on_train_step(step, total, torch.optim.SGD(host.parameters()))


def test_on_train_step_refuses_an_optimizer_that_does_not_update_the_strategy():
    host, other = Host("tie-untie"), Host("tie-untie")
    with pytest.raises(ConfigError, match=r"^strategy 'tie-untie' needs the optimizer in on_train_step"):
        host.sharing.on_train_step(0, 10)
    with pytest.raises(ConfigError, match=r"updates none of strategy 'tie-untie''s parameters"):
        host.sharing.on_train_step(0, 10, torch.optim.SGD(other.parameters()))
    with pytest.raises(ConfigError, match=r"must be the torch optimizer that updates the model, not dict"):
        host.sharing.on_train_step(0, 10, {"lr": 1})
    host.sharing.on_train_step(0, 10, torch.optim.AdamW(host.parameters()))  # the right one
    Host("tied").sharing.on_train_step(0, 10)  # a strategy without a switch needs no optimizer
