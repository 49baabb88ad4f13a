"""`embtie config` and docs/configuration.md: the reference names every key and option, and the committed
file is exactly what the command prints (regenerate: ``embtie config --markdown > docs/configuration.md``)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from embtie import models, sharing
from embtie.cli import main
from embtie.config import RunConfig, SharingConfig, TrainConfig, task_sections
from embtie.schema import declarations

DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def _run(capsys, *argv: str) -> str:
    assert main(["config", *argv]) == 0
    return capsys.readouterr().out


def _tables(markdown: str) -> dict[str, list[str]]:
    """section title -> the keys of its table."""
    out: dict[str, list[str]] = {}
    title = ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            title = line[3:]
            out[title] = []
        elif m := re.match(r"\| `([^`]+)` \|", line):
            out[title].append(m.group(1))
    return out


def test_the_committed_reference_is_what_the_command_prints(capsys):
    printed = _run(capsys, "--markdown")
    assert DOC.read_text(encoding="utf-8") == printed, (
        "docs/configuration.md is out of date: regenerate it with `embtie config --markdown > docs/configuration.md`"
    )


def test_every_field_of_every_config_dataclass_is_in_the_reference():
    tables = _tables(DOC.read_text(encoding="utf-8"))
    run = tables["run"]
    sections = {"data", "model", "sharing", "train"}
    assert [f"{f.name}" for f in dataclasses.fields(RunConfig) if f.name not in sections] == ["task", "seed"]
    assert {"task", "seed", "model.name", "sharing.name", "sharing.options"} <= set(run)
    assert [f"sharing.{f.name}" for f in dataclasses.fields(SharingConfig)] == ["sharing.name", "sharing.options"]
    assert tables["train"] == [f"train.{f.name}" for f in dataclasses.fields(TrainConfig)]
    for task, section in task_sections().items():
        assert tables[f"data (task: {task})"] == [f"data.{f.name}" for f in dataclasses.fields(section.data_config)]
    for name in models.names():
        fields = [f"model.{f.name}" for f in dataclasses.fields(models.config_class(name)) if f.name != "name"]
        assert tables[f"model (model.name: {name})"] == fields


def _signature_options(cls: type) -> dict[str, type]:
    """option -> the most derived class whose constructor takes it, read from the signatures alone."""
    out: dict[str, type] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.kind is inspect.Parameter.KEYWORD_ONLY:
                out.setdefault(p.name, klass)
    return out


def test_every_option_of_every_strategy_is_in_the_reference():
    tables = _tables(DOC.read_text(encoding="utf-8"))
    common = tables["sharing.options (every strategy)"]
    for name in sharing.names():
        opts = _signature_options(sharing.get(name))
        assert opts, name
        own = tables.get(f"sharing.options (sharing.name: {name})", [])
        for option, owner in opts.items():
            where = common if owner is sharing.SharingStrategy else own
            assert f"sharing.options.{option}" in where, (name, option)


def test_every_declaration_has_a_meaning():
    classes = [RunConfig, SharingConfig, TrainConfig, *(s.data_config for s in task_sections().values())]
    classes += [models.config_class(n) for n in models.names()]
    for cls in classes:
        for d in declarations(cls):
            if d.name in ("data", "model", "sharing", "train") and cls is RunConfig:
                continue
            assert d.name == "name" or d.setting.help, f"{cls.__name__}.{d.name} has no help"
    for name in sharing.names():
        for option in sharing.options(name).values():
            assert option.setting.help, f"option {option.name} of {name} has no declaration"


def test_filters_keep_one_task_model_and_strategy(capsys):
    out = _run(capsys, "--task", "lm", "--model", "gpt", "--strategy", "fixed")
    titles = re.findall(r"^\[([^\]]+)\]", out, re.MULTILINE)
    assert titles == [
        "run",
        "data (task: lm)",
        "model (model.name: gpt)",
        "sharing.options (every strategy)",
        "sharing.options (sharing.name: fixed)",
        "train",
    ]
    assert "  train.lr: float = 0.001; allowed: in (0, 100]\n      peak learning rate (after warmup); the" in out
    assert "sharing.options.target_dim: int or null = null; allowed: >= 1, null (the model width)" in out


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        (["--task", "lmm"], "--task 'lmm' is not a task; did you mean 'lm'?"),
        (["--model", "gtp"], "--model 'gtp' is not a model; did you mean 'gpt'?"),
        (["--strategy", "l2norn"], "--strategy 'l2norn' is not a strategy; did you mean 'l2norm'?"),
    ],
)
def test_unknown_names_are_one_line(argv, expect, capsys):
    assert main(["config", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0], err


def test_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["config", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--markdown" in out and "--strategy" in out and "type, default, allowed values" in out
