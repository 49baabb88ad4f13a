"""The foreign-loop API where a user looks first (issue 52): ``embtie.param_groups`` and
``embtie.on_train_step`` at the package top, imported on first use (``import embtie`` imports no torch)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

import embtie
from embtie import sharing
from embtie.training.optim import param_groups


def test_import_embtie_imports_no_torch_until_a_loop_call_is_used():
    code = ("import sys, embtie; assert 'torch' not in sys.modules, 'import embtie imported torch'; "
            "f = embtie.on_train_step; assert 'torch' in sys.modules and 'embtie.loop' in sys.modules; "
            "print(sorted(n for n in dir(embtie) if not n.startswith('_')))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "'on_train_step', 'param_groups'" in done.stdout


def test_the_top_names_are_the_loop_calls():
    assert embtie.param_groups is param_groups
    with pytest.raises(AttributeError, match="module 'embtie' has no attribute 'paramgroups'"):
        embtie.paramgroups  # noqa: B018 (the access is the test)


class _Host(nn.Module):
    """A user's model with an embtie strategy somewhere inside it."""

    def __init__(self, strategy: str) -> None:
        super().__init__()
        self.blocks = nn.ModuleDict({"head": sharing.build(strategy, vocab_size=20, dim=8)})
        self.mix = nn.Linear(8, 8)


def test_on_train_step_runs_every_strategy_hook_inside_the_model():
    """tie-untie unties at its step when the loop calls embtie.on_train_step on the whole model."""
    torch.manual_seed(0)
    model = _Host("tie-untie")
    optimizer = torch.optim.AdamW(embtie.param_groups(model, weight_decay=0.1, lr=1e-3), lr=1e-3)
    ids = torch.randint(0, 20, (4, 6))
    strategy = model.blocks["head"]
    for step in range(10):
        embtie.on_train_step(model, step, 10, optimizer)
        loss = strategy.loss(model.mix(strategy.embed(ids[:, :-1])), ids[:, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    assert strategy.is_untied and strategy.step_hook_ran


def test_a_model_without_a_strategy_is_one_line():
    with pytest.raises(ValueError, match=r"^embtie.on_train_step: this Linear holds no embtie strategy; [^\n]+$"):
        embtie.on_train_step(nn.Linear(2, 2), 0, 10)
