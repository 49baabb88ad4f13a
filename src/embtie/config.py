"""Run configuration: typed dataclasses loaded from YAML presets or files, with ``key=value`` overrides.

A run config has six sections::

    task: lm                 # a registered task (embtie.tasks): picks the dataclass of ``data``
    seed: 0
    data: {...}              # the task's data config (e.g. embtie.tasks.lm.LMDataConfig)
    model: {name: gpt, ...}  # a registered model (embtie.models): ``name`` picks the dataclass
    sharing: {name: tied, options: {...}}   # any strategy of embtie.sharing and its options
    train: {...}             # TrainConfig: optimizer, schedule, steps, precision, logging

``load_config("ptb-gpt-tiny", ["sharing.name=l2norm", "train.max_steps=50"])`` reads the preset
``src/embtie/configs/ptb-gpt-tiny.yaml`` (package data, so it works from any folder) or a YAML path,
applies the overrides (dotted keys; values parsed as YAML scalars), and validates everything: an
unknown key or a wrong type is a one-line ``ConfigError`` that names the valid keys or values.

New tasks and models add their own dataclasses through the registries in ``embtie.tasks`` and
``embtie.models``; nothing here needs to change. A task registers its ``data`` dataclass here
(``register_task_section``, called by ``embtie.tasks.registry.register``), so this module imports no
task: the built-in tasks are loaded as plugins the first time a config names a task not yet registered.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import importlib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from embtie.errors import ConfigError

# ---------------------------------------------------------------------------- sections


@dataclass
class SharingConfig:
    """Which input/output embedding strategy to use, and its options (see ``embtie strategies --options``)."""

    name: str = "tied"
    options: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        from embtie import sharing

        valid = sharing.accepted_options(self.name)  # ConfigError for an unknown name
        for k in self.options:
            if k not in valid:
                raise ConfigError(
                    f"unknown option 'sharing.options.{k}' for strategy {self.name!r}{did_you_mean(k, valid)}; "
                    f"valid options: {', '.join(sorted(valid))}"
                )


@dataclass
class TrainConfig:
    """Optimisation, schedule, precision, evaluation and logging of one run."""

    optimizer: Literal["adamw", "sgd"] = "adamw"
    lr: float = 1e-3
    """peak learning rate (after warmup)."""
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    eps: float = 1e-8
    momentum: float = 0.0
    """SGD momentum (sgd only)."""
    weight_decay: float = 0.0
    """decoupled (adamw) or L2 (sgd) decay of the model's matrices (ndim >= 2)."""
    embedding_weight_decay: float = 0.0
    """decay of the strategy's vocabulary-sized matrices (E, O): set explicitly, separate param group."""
    schedule: Literal["constant", "cosine", "linear", "inverse_sqrt", "step", "plateau"] = "constant"
    """lr decay after warmup; ``step`` multiplies by decay_factor every epoch after decay_after_epochs;
    ``plateau`` multiplies by decay_factor after plateau_patience validations without improvement of
    ``monitor``."""
    warmup_steps: int = 0
    min_lr_ratio: float = 0.0
    """cosine / linear decay end at lr * min_lr_ratio."""
    decay_factor: float = 0.5
    decay_after_epochs: int = 4
    plateau_patience: int = 8
    """validations without improvement of ``monitor`` before a ``plateau`` schedule decays the lr."""
    monitor: Literal["loss", "bleu"] = "loss"
    """the validation metric that picks the best checkpoint (checkpoints/best) and drives the plateau
    schedule and early stopping: loss (lower is better) or bleu (translation: greedy decoding of the
    validation split, higher is better)."""
    early_stop: int = 0
    """stop after this many validations without improvement of ``monitor`` (0: never)."""
    epochs: float | None = 1.0
    """training length in epochs (fractions allowed); ``max_steps`` caps it."""
    max_steps: int | None = None
    """cap on optimizer steps, whatever ``epochs`` says; the schedule spans the capped length."""
    grad_clip: float | None = 1.0
    """clip the global gradient norm to this value (null: no clipping)."""
    precision: Literal["fp32", "bf16"] = "fp32"
    """bf16: autocast matmuls to bfloat16 (weights and optimizer state stay fp32)."""
    device: str = "auto"
    """auto (cuda when available, else cpu), cpu, cuda, cuda:N."""
    eval_every: int = 0
    """validate every N steps (0: at the end of each epoch only); the final validation is always done."""
    eval_batches: int | None = None
    """cap on validation batches during training (null: the whole split); the final one is always whole."""
    log_every: int = 20
    """write a train record to metrics.jsonl every N steps (mean loss over those steps)."""
    checkpoint_every: int = 500
    """write a checkpoint every N steps (0: only at epoch ends); one is always written at the end."""
    keep_checkpoints: int = 1
    """keep the newest N checkpoints (checkpoint averaging, ``embtie average --last N``, needs N)."""
    accumulate: int = 1
    """gradient accumulation: each optimizer step runs this many consecutive batches (micro-batches) and
    uses the mean of their gradients, so the effective batch is this many times the data's batch; an
    epoch has ceil(batches / accumulate) steps, and every step-based option counts optimizer steps."""
    progress: bool = True
    """show a tqdm progress bar (rank 0 only)."""
    compile: bool = False
    """torch.compile the model."""
    parallel: Literal["ddp", "fsdp"] = "ddp"
    """how a multi-process (torchrun) run spreads the model: ddp (every process holds all weights,
    gradients all-reduced) or fsdp (FSDP2 ``fully_shard``: each block, the sharing strategy as one unit
    and the rest sharded over the processes; checkpoints are gathered to the single-process format)."""
    threads: int | None = None
    """CPU threads of this process (torch.set_num_threads); null: torch's default. On a busy machine
    1 thread per process can be much faster than 2 (no OpenMP spinning against other processes)."""
    path_probe: int = 0
    """at every validation, split the gradient of this many (fixed) training batches into its input- and
    output-path parts per vocabulary row and accumulate them (``RUN_DIR/path_shares.npz``, Press & Wolf's
    update dynamics; ``embtie.training.path_shares``); 0: off. Does not change training."""
    skip_nonfinite: int = 0
    """a step whose loss or gradient is not finite stops training (no update, no checkpoint written after
    it); N > 0 skips up to N such steps instead (no update; counted in the summary) and stops at the next."""

    def validate(self) -> None:
        positive = {"lr": self.lr, "eps": self.eps, "decay_factor": self.decay_factor}
        for k, v in positive.items():
            if not v > 0:
                raise ConfigError(f"train.{k}={v} must be > 0")
        nonneg = {
            "weight_decay": self.weight_decay,
            "embedding_weight_decay": self.embedding_weight_decay,
            "momentum": self.momentum,
            "warmup_steps": self.warmup_steps,
            "min_lr_ratio": self.min_lr_ratio,
            "decay_after_epochs": self.decay_after_epochs,
            "eval_every": self.eval_every,
            "checkpoint_every": self.checkpoint_every,
            "skip_nonfinite": self.skip_nonfinite,
            "path_probe": self.path_probe,
            "early_stop": self.early_stop,
        }
        for k, v in nonneg.items():
            if v < 0:
                raise ConfigError(f"train.{k}={v} must be >= 0")
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ConfigError(f"train.betas={self.betas} must be two numbers in [0, 1)")
        if self.epochs is None and self.max_steps is None:
            raise ConfigError("train.epochs and train.max_steps are both null; set at least one")
        if self.epochs is not None and not self.epochs > 0:
            raise ConfigError(f"train.epochs={self.epochs} must be > 0")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"train.max_steps={self.max_steps} must be >= 1")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ConfigError(f"train.grad_clip={self.grad_clip} must be > 0 (or null for no clipping)")
        if self.plateau_patience < 1:
            raise ConfigError(f"train.plateau_patience={self.plateau_patience} must be >= 1")
        if self.accumulate < 1:
            raise ConfigError(f"train.accumulate={self.accumulate} must be >= 1 (1: no gradient accumulation)")
        if self.keep_checkpoints < 1:
            raise ConfigError(f"train.keep_checkpoints={self.keep_checkpoints} must be >= 1")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"train.threads={self.threads} must be >= 1 (or null for torch's default)")
        if self.log_every < 1:
            raise ConfigError(f"train.log_every={self.log_every} must be >= 1")
        if self.eval_batches is not None and self.eval_batches < 1:
            raise ConfigError(f"train.eval_batches={self.eval_batches} must be >= 1 (or null for all)")
        if self.device != "auto" and self.device != "cpu" and not self.device.startswith("cuda"):
            raise ConfigError(f"train.device={self.device!r} must be auto, cpu, cuda or cuda:N")


@dataclass
class RunConfig:
    """One run: task + data, model, sharing strategy, training, seed."""

    task: str = "lm"
    seed: int = 0
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


# ---------------------------------------------------------------------------- loading


def presets_dir() -> Path:
    """The folder of the packaged presets (``embtie/configs``)."""
    return Path(str(resources.files("embtie") / "configs"))


def preset_names() -> list[str]:
    d = presets_dir()
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def read_spec(spec: str | Path) -> dict[str, Any]:
    """The raw dict of a preset name or a YAML file path."""
    p = Path(spec).expanduser()
    if p.suffix in (".yaml", ".yml") or p.is_file():
        if p.is_dir():
            raise ConfigError(f"config file {p} is a folder; give a YAML file or a preset name")
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist; give a preset name ({', '.join(preset_names())})")
    else:
        p = presets_dir() / f"{spec}.yaml"
        if not p.is_file():
            raise ConfigError(
                f"unknown preset {str(spec)!r}{did_you_mean(str(spec), preset_names())}; choose one of: "
                f"{', '.join(preset_names())} or a .yaml path"
            )
    return read_yaml_mapping(p, "config file")


def read_yaml_mapping(path: str | Path, what: str = "config file") -> dict[str, Any]:
    """The mapping a YAML file holds (a config or a run's config.yaml); a ConfigError naming the file when
    it cannot be read, is not UTF-8 text, is not valid YAML, is empty, or holds something else."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read {what} {p}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{what} {p} is not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start}); save it as UTF-8 YAML"
        ) from None
    if "\x00" in text:
        raise ConfigError(f"{what} {p} is a binary file, not YAML text")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)  # foreign: a yaml.YAMLError (marked ones have it)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]  # foreign: a yaml.YAMLError
        raise ConfigError(f"{what} {p} is not valid YAML{where}: {problem}") from None
    if raw is None:
        raise ConfigError(f"{what} {p} is empty; it must hold a mapping with task, data, model, sharing, train")
    if not isinstance(raw, dict):
        hint = " (write `key: value` lines, not `- item` lines)" if isinstance(raw, list) else ""
        raise ConfigError(
            f"{what} {p} holds a {_yaml_kind(raw)}, not a mapping with task, data, model, sharing, train{hint}"
        )
    return raw


def _yaml_kind(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def did_you_mean(word: str, choices: Any) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices`` to a mistyped ``word``, or ``""``."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def parse_override(text: str) -> tuple[str, Any]:
    """``"train.lr=3e-4"`` -> ("train.lr", 0.0003); the value is parsed as a YAML scalar."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {text!r} must look like key=value, e.g. train.max_steps=50")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        parsed = value
    return key, parsed


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


def load_config(spec: str | Path, overrides: list[str] | None = None) -> RunConfig:
    """Preset name or YAML path + ``key=value`` overrides -> validated RunConfig."""
    raw = read_spec(spec)
    file_raw = copy.deepcopy(raw)
    for o in overrides or []:
        k, v = parse_override(o)
        set_dotted(raw, k, v)
    try:
        return config_from_dict(raw)
    except ConfigError as e:
        if spec in preset_names():
            raise
        try:  # the error is the file's own when the file alone gives it too: name the file
            config_from_dict(file_raw)
        except ConfigError as alone:
            if str(alone) == str(e):
                raise ConfigError(f"{Path(spec).expanduser()}: {e}") from None
        except Exception:
            pass
        raise


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
        raise ConfigError(f"a config must be a mapping with {', '.join(_TOP_KEYS)}, not a {_yaml_kind(raw)}")
    unknown = [k for k in raw if k not in _TOP_KEYS]
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r}{did_you_mean(unknown[0], _TOP_KEYS)}; valid keys: {', '.join(_TOP_KEYS)}"
        )
    task = _convert(raw.get("task", "lm"), str, "task")
    section = task_section(task)
    model_raw = raw.get("model") or {}
    if not isinstance(model_raw, dict) or "name" not in model_raw:
        raise ConfigError(f"model must be a mapping with a name; choose one of: {', '.join(models.names())}")
    model_cls = models.config_class(_convert(model_raw["name"], str, "model.name"))
    cfg = RunConfig(
        task=task,
        seed=_convert(raw.get("seed", 0), int, "seed"),
        data=from_dict(section.data_config, raw.get("data") or {}, "data", f" for task {task!r}"),
        model=from_dict(model_cls, model_raw, "model", f" for model {model_raw['name']!r}"),
        sharing=from_dict(SharingConfig, raw.get("sharing") or {}, "sharing"),
        train=from_dict(TrainConfig, raw.get("train") or {}, "train"),
    )
    section.check(cfg)
    check_strategy(cfg)
    return cfg


def check_strategy(cfg: RunConfig) -> None:
    """Build the strategy once with a 2-token vocabulary, so that a bad option value (``logit_scale=banana``)
    is a ConfigError when the config is read, before anything is written or any data is loaded."""
    import torch

    from embtie import sharing

    dim = cfg.model.embedding_dim  # every registered model config is an embtie.models.ModelConfig
    if not isinstance(dim, int) or dim < 1:
        return
    with torch.random.fork_rng(devices=[]):
        sharing.build(cfg.sharing.name, vocab_size=2, dim=dim, **cfg.sharing.options)


def from_dict(cls: type, raw: Any, where: str, context: str = "") -> Any:
    """Build dataclass ``cls`` from a mapping, converting and type-checking each value, then ``validate()``."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping of keys to values, not {raw!r}")
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {}
    for k, v in raw.items():
        if k not in fields:
            raise ConfigError(
                f"unknown key '{where}.{k}'{context}{did_you_mean(k, fields)}; valid keys: {', '.join(fields)}"
            )
        kwargs[k] = _convert(v, hints[k], f"{where}.{k}")
    obj = cls(**kwargs)
    obj.validate()  # every section declares it: model configs inherit ModelConfig's, data configs their own
    return obj


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string"}.get(
            tp.__name__, tp.__name__
        )
    return str(tp).replace("typing.", "")


def _convert(value: Any, tp: Any, key: str) -> Any:
    """Check (and gently coerce: int -> float, '3e-4' -> 3e-4, 'null' -> None) ``value`` against type ``tp``."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        is_null = value is None or (isinstance(value, str) and value.lower() in ("none", "null"))
        if is_null and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(value, a, key)
            except ConfigError as e:
                errors.append(e)
        allowed = " or ".join(_type_name(a) if a is not type(None) else "null" for a in args)
        raise ConfigError(f"{key}={value!r} must be {allowed}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{key}={value!r} must be one of: {', '.join(map(str, args))}{did_you_mean(value, args)}")
        return value
    if origin is list:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{key}={value!r} must be a list, e.g. [0.9, 0.95]")
        return [_convert(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)] if args else list(value)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}={value!r} must be a mapping")
        return dict(value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}={value!r} must be true or false")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(f"{key}={value!r} must be an integer")
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{key}={value!r} must be a number")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{key}={value!r} must be a string")
    return value
