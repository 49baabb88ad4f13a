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
        ({"lr": 0}, r"param_groups\(lr\)=0 must be in \(0, 100\]"),
        ({"lr": math.inf}, r"param_groups\(lr\)=inf must be a finite number in \(0, 100\]"),
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


# --- embtie.loop: the foreign loop's calls, checked once before any hook runs (issue 54, item 5) ---------------

from types import SimpleNamespace  # noqa: E402

from embtie import loop  # noqa: E402
from embtie.config import TrainConfig  # noqa: E402
from embtie.schema import TRAINING_STEPS, declarations  # noqa: E402
from embtie.sharing.capabilities import VocabularyTables  # noqa: E402


class Table(VocabularyTables):
    """A vocabulary table that is not a strategy (as a translation encoder's own embedding)."""

    def __init__(self) -> None:
        super().__init__()
        self.vocab_size = 10
        self.weight = nn.Parameter(torch.zeros(10, 4))


@pytest.mark.parametrize(
    ("step", "total", "message"),
    [
        (0, 0, r"on_train_step\(total_steps\)=0 must be >= 1"),
        (0, -3, r"on_train_step\(total_steps\)=-3 must be >= 1"),
        (0, math.inf, r"on_train_step\(total_steps\)=inf must be an integer >= 1"),
        (0, 2.5, r"on_train_step\(total_steps\)=2.5 must be an integer >= 1"),
        (0, None, r"on_train_step\(total_steps\)=null must be an integer >= 1"),
        (math.nan, 10, r"on_train_step\(step\)=nan must be an integer >= 0"),
        (-1, 10, r"on_train_step\(step\)=-1 must be >= 0"),
        (True, 10, r"on_train_step\(step\)=true must be an integer >= 0"),
        (11, 10, r"on_train_step\(step=11\) is past the training's 10 steps"),
    ],
)
@pytest.mark.parametrize("name", ["tied", "tie-untie"])
def test_loop_on_train_step_refuses_a_step_outside_the_training(step, total, message, name):
    host = Host(name)
    with pytest.raises(ConfigError, match=f"^{message}"):
        loop.on_train_step(host, step, total, torch.optim.AdamW(host.parameters()))


def test_total_steps_is_checked_with_train_max_steps_declaration():
    """One place for the bound: the API's message is the one train.max_steps' Setting gives."""
    (max_steps,) = [d for d in declarations(TrainConfig) if d.name == "max_steps"]
    assert (max_steps.setting.ge, max_steps.setting.gt) == (TRAINING_STEPS.ge, TRAINING_STEPS.gt) == (1, None)
    with pytest.raises(ConfigError, match=r"^train\.max_steps=0 must be >= 1"):
        TrainConfig(max_steps=0)
    with pytest.raises(ConfigError, match=r"^on_train_step\(total_steps\)=0 must be >= 1"):
        loop.on_train_step(Host(), 0, 0)


def test_a_table_that_is_not_a_strategy_refuses_the_same_steps():
    host = nn.Sequential(Table(), nn.Linear(4, 4))
    with pytest.raises(ConfigError, match=r"^on_train_step\(step\)=nan must be an integer >= 0"):
        loop.on_train_step(host, math.nan, 10)
    with pytest.raises(ConfigError, match=r"^on_train_step\(total_steps\)=0 must be >= 1"):
        host[0].on_train_step(0, 0)
    loop.on_train_step(host, 9, 10)  # the last step is inside


@pytest.mark.parametrize(
    ("optimizer", "message"),
    [
        (None, r"^strategy 'tie-untie' needs the optimizer in on_train_step"),
        ("other", r"^on_train_step\(optimizer=\.\.\.\): this optimizer updates none of strategy 'tie-untie''s"),
        ("dict", r"^on_train_step\(optimizer=\.\.\.\) must be the torch optimizer .*, not dict"),
        ("model", r"^on_train_step\(optimizer=\.\.\.\) must be the torch optimizer .*, not Host"),
    ],
)
def test_loop_on_train_step_refuses_no_optimizer_or_the_wrong_one(optimizer, message):
    host = Host("tie-untie")
    given = {"other": torch.optim.AdamW(Host("tie-untie").parameters()), "model": host, "dict": {"lr": 1e-3}}
    given = given.get(optimizer) if isinstance(optimizer, str) else optimizer
    with pytest.raises(ConfigError, match=message):
        loop.on_train_step(host, 0, 10, given)


def test_loop_checks_every_strategy_before_any_hook_runs():
    """A tied strategy beside a tie-untie one: the call refused for tie-untie runs neither hook."""
    host = nn.Module()
    host.a, host.b = Host("tied"), Host("tie-untie")
    with pytest.raises(ConfigError, match=r"^strategy 'tie-untie' needs the optimizer"):
        loop.on_train_step(host, 0, 10)
    assert not host.a.sharing.step_hook_ran and not host.b.sharing.step_hook_ran


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("model", r"^embtie\.on_train_step\(model=\.\.\.\) must be the torch module being trained, not str"),
        (nn.Linear(2, 2), r"^embtie\.on_train_step: this Linear holds no embtie strategy"),
    ],
)
def test_loop_on_train_step_refuses_a_model_without_strategy(model, message):
    with pytest.raises(ConfigError, match=message):
        loop.on_train_step(model, 0, 10)


def _untie_half_way() -> tuple[Host, torch.optim.Optimizer]:
    host = Host("tie-untie")
    host.sharing = sharing.build("tie-untie", vocab_size=10, dim=4, untie_at=0.5)
    return host, torch.optim.AdamW(host.parameters(), lr=1e-2)


def _step(host: Host, optimizer: torch.optim.Optimizer, step: int, total: int) -> None:
    loop.on_train_step(host, step, total, optimizer)
    ids = torch.arange(10).view(2, 5)
    host.sharing.logits(host.body(host.sharing.embed(ids))).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad()


def test_a_call_before_training_does_not_untie_without_e_s_moments():
    host, optimizer = _untie_half_way()
    with pytest.raises(
        ConfigError,
        match=r"^strategy 'tie-untie' unties at on_train_step\(step=5\) but the optimizer "
        r"holds no state for E yet .*load the optimizer's state first",
    ):
        loop.on_train_step(host, 5, 10, optimizer)  # an Adam that has never stepped
    assert not host.sharing.is_untied
    for step in range(6):  # the same training called from step 0: untied at 5 with E's moments
        _step(host, optimizer, step, 10)
    assert host.sharing.is_untied
    host, _ = _untie_half_way()
    loop.on_train_step(host, 5, 10, torch.optim.SGD(host.parameters(), lr=0.1))  # no moments to copy
    assert host.sharing.is_untied
    host = Host("tie-untie")
    host.sharing = sharing.build("tie-untie", vocab_size=10, dim=4, untie_at=0.0)
    loop.on_train_step(host, 0, 10, torch.optim.AdamW(host.parameters()))  # untie at step 0: nothing stepped yet
    assert host.sharing.is_untied


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: loop.param_groups("m"), r"^param_groups\(model=\.\.\.\) must be the torch module to train, not str"),
        (
            lambda m: loop.param_groups(m, {"weight_decay": 0.1}),
            r"^param_groups\(cfg=\.\.\.\) must be an embtie "
            r"TrainConfig .*, not dict; a foreign loop passes the keywords",
        ),
        (lambda m: loop.param_groups(m, weight_decay=-1e-9), r"^param_groups\(weight_decay\)=-1e-09 must be >= 0"),
        (lambda m: loop.param_groups(m, weight_decay="x"), r"^param_groups\(weight_decay\)='x' is text: it must be"),
        (lambda m: loop.param_groups(m, lr=-1e-3), r"^param_groups\(lr\)=-0.001 must be in \(0, 100\]"),
        (lambda m: loop.param_groups(m, lr=math.nan), r"^param_groups\(lr\)=nan must be a finite number in \(0, 100\]"),
        (
            lambda m: loop.param_groups(m, lr=2.0**63),
            r"^param_groups\(lr\)=9.223372036854776e\+18 must be in \(0, 100\]",
        ),
        (
            lambda m: loop.param_groups(m, weight_decay=1e308),
            r"^param_groups\(weight_decay\)=1e\+308 is too large: a number here must be <= 2,147,483,647",
        ),
        (lambda m: TableSettings(lr_mult=1e308), r"^TableSettings\.lr_mult=1e\+308 is too large"),
        (
            lambda m: loop.param_groups(m, embedding_weight_decay=-math.inf),
            r"^param_groups\(embedding_weight_decay\)=-inf must be a finite number >= 0",
        ),
        (lambda m: TableSettings(lr_mult=0), r"^TableSettings\.lr_mult=0 must be > 0"),
        (lambda m: TableSettings(lr_mult=math.nan), r"^TableSettings\.lr_mult=nan must be a finite number > 0"),
        (lambda m: TableSettings(betas=(0.9, 1.0)), r"^TableSettings\.betas=\[0.9, 1.0\] must be a list of 2 numbers"),
        (lambda m: TableSettings(betas=(-0.1, 0.9)), r"^TableSettings\.betas=\[-0.1, 0.9\] must be a list of 2"),
        (lambda m: TableSettings(betas=(0.9, 0.95, 0.99)), r"^TableSettings\.betas=\[0.9, 0.95, 0.99\] must be"),
    ],
)
def test_param_groups_neighbours_are_refused_with_one_line(call, message):
    with pytest.raises(ConfigError, match=message) as caught:
        call(Host())
    assert "\n" not in str(caught.value)


def test_the_api_and_the_config_key_refuse_with_the_same_bound():
    """Each API argument shows the bound of the key it stands for (the declaration is the one source)."""
    for field, value, api in [
        ("weight_decay", -1, lambda: loop.param_groups(Host(), weight_decay=-1)),
        ("lr", -1, lambda: loop.param_groups(Host(), lr=-1)),
        ("betas", [1.5, 0.9], lambda: TableSettings(betas=(1.5, 0.9))),
    ]:
        with pytest.raises(ConfigError) as by_key:
            TrainConfig(**{field: value})
        with pytest.raises(ConfigError) as by_api:
            api()
        bound = str(by_api.value).split(" must be ")[1]  # the key's message adds its default after the bound
        assert str(by_key.value).split(" must be ")[1].startswith(bound)


# --- EmbtieCallback: the Trainer's calls, checked as on_train_step's ------------------------------------------


def _callback_model(strategy: str = "tie-untie"):
    pytest.importorskip("transformers")
    import embtie.hf as eh
    from embtie.hf.tiny import tiny_model

    return eh.apply(tiny_model("gpt2", 32), strategy, untie_at=0.5)


def _state(step: float, total: float) -> SimpleNamespace:
    return SimpleNamespace(global_step=step, max_steps=total)


def test_the_callback_refuses_a_call_before_training_and_a_training_of_no_steps():
    model = _callback_model()
    from embtie.hf.callback import EmbtieCallback

    hook, opt = EmbtieCallback(), torch.optim.AdamW(model.parameters())
    with pytest.raises(ConfigError, match=r"^EmbtieCallback\.on_step_begin ran at step 0 before on_train_begin"):
        hook.on_step_begin(None, _state(0, 10), None, model=model, optimizer=opt)
    for total, shown in [(0, "0"), (-1, "-1"), (math.nan, "nan")]:
        with pytest.raises(ConfigError, match=rf"^EmbtieCallback: the Trainer's max_steps={shown} must be"):
            hook.on_train_begin(None, _state(0, total), None, model=model)
    with pytest.raises(ConfigError, match=r"^EmbtieCallback needs a model patched by embtie\.hf\.apply"):
        hook.on_train_begin(None, _state(0, 10), None, model=None)
    assert hook.calls == []


@pytest.mark.parametrize(
    ("step", "optimizer", "message"),
    [
        (math.nan, "own", r"on_train_step\(step\)=nan must be an integer >= 0"),
        (10, "own", r"on_train_step\(step=10\) is past the training's 10 steps"),
        (0, None, r"strategy 'tie-untie' needs the optimizer in on_train_step"),
        (0, "other", r"this optimizer updates none of strategy 'tie-untie''s parameters"),
        (5, "own", r"unties at on_train_step\(step=5\) but the optimizer holds no state for E yet"),
    ],
)
def test_the_callback_refuses_what_on_train_step_refuses_naming_the_trainer(step, optimizer, message):
    model = _callback_model()
    from embtie.hf.callback import EmbtieCallback

    hook = EmbtieCallback()
    hook.on_train_begin(None, _state(0, 10), None, model=model)
    given = {"own": torch.optim.AdamW(model.parameters()), "other": torch.optim.AdamW(nn.Linear(2, 2).parameters())}
    with pytest.raises(ConfigError, match=rf"^EmbtieCallback at the Trainer's step {step}: .*{message}"):
        hook.on_step_begin(None, _state(step, 10), None, model=model, optimizer=given.get(optimizer))
    with pytest.raises(ConfigError, match=r"^EmbtieCallback\.on_step_begin got no model"):
        hook.on_step_begin(None, _state(0, 10), None, model=None, optimizer=given["own"])
    hook.on_step_begin(None, _state(0, 10), None, model=model, optimizer=given["own"])  # the right call runs
    assert hook.calls == [0]


def test_a_table_multiplier_may_pass_train_lr_s_own_bound():
    """lr_mult is a ratio of two rates (an embedding lr of 0.3 over a body's 1e-3 is 300), not a rate."""
    groups = param_groups(Host(), head=TableSettings(lr_mult=300.0), lr=1e-3)
    head = next(g for g in groups if g.get("lr_mult") == 300.0)
    assert head["lr"] == pytest.approx(0.3)
