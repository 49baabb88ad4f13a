"""The run config (``RunConfig``): its top keys (``task``, ``seed``), its ``sharing`` section, and how a
nested dict of keys (a YAML file with ``key=value`` overrides) becomes one, every section validated by
its declarations (``embtie.schema``).

A task registers the dataclass of its ``data`` section here (``register_task_section``, called by
``embtie.tasks.registry.register``), so this module imports no task: the built-in tasks are loaded as
plugins the first time a config names a task not yet registered.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import yaml

from embtie.config.train import TrainConfig
from embtie.errors import ConfigError
from embtie.schema import Declared, Setting, check, did_you_mean, parse_scalar


def _strategy_names() -> list[str]:
    from embtie import sharing

    return sharing.names()


def _task_names() -> list[str]:
    return list(task_sections())


@dataclass
class SharingConfig(Declared):
    """Which input/output embedding strategy to use, and its options (see ``embtie strategies --options``)."""

    section = "sharing"

    name: Annotated[str, Setting("the sharing strategy (embtie strategies lists them)", choices=_strategy_names)] = (
        "tied"
    )
    options: Annotated[
        dict[str, Any], Setting("the strategy's options (sharing.options.* below); values are checked by the strategy")
    ] = field(default_factory=dict)

    def check(self) -> None:
        from embtie import sharing

        self.options = sharing.check_options(self.name, self.options, "sharing.options.")


@dataclass
class RunConfig(Declared):
    """One run: task + data, model, sharing strategy, training, seed."""

    task: Annotated[str, Setting("what the run trains on; picks the dataclass of data", choices=_task_names)] = "lm"
    seed: Annotated[
        int, Setting("the run's seed: the strategy's and the body's initial weights, data order, dropout", ge=0)
    ] = 0
    data: Any = None
    """the task's data dataclass (registered with ``register_task_section``)."""
    model: Any = None
    """the model's dataclass (``embtie.models.config_class(name)``, an ``embtie.models.ModelConfig``)."""
    sharing: SharingConfig = field(default_factory=SharingConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (YAML-safe), the inverse of ``config_from_dict``."""
        return {
            "task": self.task,
            "seed": self.seed,
            "data": dataclasses.asdict(self.data),
            "model": dataclasses.asdict(self.model),
            "sharing": {"name": self.sharing.name, "options": dict(self.sharing.options)},
            "train": dataclasses.asdict(self.train),
        }

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=False)

    def replace(self, overrides: list[str] | dict[str, Any]) -> RunConfig:
        """A validated copy with ``key=value`` overrides (a list of strings or a {dotted_key: value} dict)."""
        raw = self.to_dict()
        items = overrides.items() if isinstance(overrides, dict) else [parse_override(o) for o in overrides]
        for k, v in items:
            set_dotted(raw, k, v)
        return config_from_dict(raw)


def parse_override(text: str) -> tuple[str, Any]:
    """``"train.lr=3e-4"`` -> ("train.lr", 0.0003); the value is read by ``embtie.schema.parse_scalar``
    (a number when it spells one, else a YAML scalar)."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {text!r} must look like key=value, e.g. train.max_steps=50")
    return key, parse_scalar(value)


def set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Set ``raw[a][b][c] = value`` for key ``a.b.c``, creating mappings on the way."""
    parts = key.split(".")
    node = raw
    for i, part in enumerate(parts[:-1]):
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        if not isinstance(nxt, dict):
            raise ConfigError(f"cannot set {key}: {'.'.join(parts[: i + 1])} is a value, not a section")
        node = nxt
    node[parts[-1]] = value


_TOP_KEYS = ("task", "seed", "data", "model", "sharing", "train")


@dataclass(frozen=True)
class TaskSection:
    """What the config needs to know of a task: the dataclass of its ``data`` section and its
    cross-section check (e.g. sequence length vs the model's positions; raises ConfigError)."""

    data_config: type
    check: Callable[[RunConfig], None]


_TASK_SECTIONS: dict[str, TaskSection] = {}
TASK_PLUGINS = ("embtie.tasks",)
"""modules imported (once) when a config names a task that is not registered yet: importing them
registers the built-in tasks. A third-party task registers itself when its module is imported."""


def register_task_section(name: str, data_config: type, check: Callable[[RunConfig], None]) -> None:
    """Make ``task: name`` readable: its ``data`` section is parsed into ``data_config``."""
    _TASK_SECTIONS[name] = TaskSection(data_config, check)


def task_sections() -> dict[str, TaskSection]:
    """Every registered task's section (the built-in tasks loaded first), by task name."""
    for module in TASK_PLUGINS:
        importlib.import_module(module)
    return dict(_TASK_SECTIONS)


def task_section(name: str) -> TaskSection:
    """The registered section of task ``name``; a ConfigError listing the valid names otherwise."""
    if name not in _TASK_SECTIONS:
        for module in TASK_PLUGINS:
            importlib.import_module(module)
    try:
        return _TASK_SECTIONS[name]
    except KeyError:
        raise ConfigError(
            f"unknown task {name!r}{did_you_mean(name, _TASK_SECTIONS)}; choose one of: {', '.join(_TASK_SECTIONS)}"
        ) from None


def config_from_dict(raw: dict[str, Any]) -> RunConfig:
    """Validate a nested dict and build the RunConfig (task and model sections by their registries)."""
    from embtie import models

    if not isinstance(raw, dict):
        raise ConfigError(f"a config must be a mapping with {', '.join(_TOP_KEYS)}, not a {yaml_kind(raw)}")
    unknown = [k for k in raw if k not in _TOP_KEYS]
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r}{did_you_mean(unknown[0], _TOP_KEYS)}; valid keys: {', '.join(_TOP_KEYS)}"
        )
    task = check(raw.get("task", "lm"), str, "task")
    section = task_section(task)
    model_raw = raw.get("model") or {}
    if not isinstance(model_raw, dict) or "name" not in model_raw:
        raise ConfigError(f"model must be a mapping with a name; choose one of: {', '.join(models.names())}")
    model_cls = models.config_class(check(model_raw["name"], str, "model.name"))
    cfg = RunConfig(
        task=task,
        seed=raw.get("seed", 0),
        data=from_dict(section.data_config, raw.get("data") or {}, "data", f" for task {task!r}"),
        model=from_dict(model_cls, model_raw, "model", f" for model {model_raw['name']!r}"),
        sharing=from_dict(SharingConfig, raw.get("sharing") or {}, "sharing"),
        train=from_dict(TrainConfig, raw.get("train") or {}, "train"),
    )
    section.check(cfg)
    check_strategy(cfg)
    return cfg


CHECK_IN_MEMORY_DIM = 2**20
"""the widest strategy ``check_strategy`` builds in memory when it cannot be built on the meta device (8 MB)."""


def check_strategy(cfg: RunConfig) -> None:
    """Build the strategy once with a 2-token vocabulary, so that a bad option value (``logit_scale=banana``)
    is a ConfigError when the config is read, before anything is written or any data is loaded."""
    import torch

    from embtie import sharing

    dim = cfg.model.embedding_dim  # every registered model config is an embtie.models.ModelConfig
    if not isinstance(dim, int) or dim < 1:
        return
    built = None
    with torch.random.fork_rng(devices=[]):
        try:  # on the meta device: a width of 10^9 must not allocate 8 GB to check an option
            with torch.device("meta"):
                built = sharing.build(cfg.sharing.name, vocab_size=2, dim=dim, **cfg.sharing.options)
        except (RuntimeError, NotImplementedError):  # a strategy that reads its own tensors while it is built
            if dim <= CHECK_IN_MEMORY_DIM:
                built = sharing.build(cfg.sharing.name, vocab_size=2, dim=dim, **cfg.sharing.options)
    if built is not None:  # train.head_* needs a separate learned head (embtie.training.table_settings)
        cfg.train.check_head(bool(built.head_tables()), f"strategy {cfg.sharing.name!r}")


def from_dict(cls: type, raw: Any, where: str, context: str = "") -> Any:
    """Build the section dataclass ``cls`` (an ``embtie.schema.Declared``) from a mapping: unknown keys are
    refused here, every value is converted and checked by its declaration when the instance is made."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping of keys to values, not {raw!r}")
    fields = [f.name for f in dataclasses.fields(cls)]
    for k in raw:
        if k not in fields:
            raise ConfigError(
                f"unknown key '{where}.{k}'{context}{did_you_mean(k, fields)}; valid keys: {', '.join(fields)}"
            )
    return cls(**{str(k): v for k, v in raw.items()})


def yaml_kind(value: Any) -> str:
    """How a YAML value is called in a message: list, string, number, boolean, mapping."""
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean", dict: "mapping"}.get(
        type(value), type(value).__name__
    )
