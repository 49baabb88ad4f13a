"""Config files: the packaged presets (``src/embtie/configs/*.yaml``), YAML files, and ``load_config``,
which reads one and applies ``key=value`` overrides."""

from __future__ import annotations

import copy
import os
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from embtie import cheap
from embtie.config.run import RunConfig, config_from_dict, parse_override, set_dotted, yaml_kind
from embtie.errors import ConfigError
from embtie.schema import did_you_mean


def presets_dir() -> Path:
    """The folder of the packaged presets (``embtie/configs``)."""
    return Path(str(resources.files("embtie") / "configs"))


def preset_names() -> list[str]:
    d = presets_dir()
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def read_spec(spec: str | Path) -> dict[str, Any]:
    """The raw dict of a preset name or a YAML file path."""
    p = Path(spec).expanduser()
    preset = "/" not in str(spec) and str(spec) in preset_names()
    if p.suffix in (".yaml", ".yml") or (p.exists() and not preset) or "/" in str(spec):
        if p.is_dir():
            raise ConfigError(f"config file {p} is a folder; give a YAML file or a preset name")
        if p.exists() and not p.is_file():
            raise ConfigError(f"config file {p} is not a regular file (a device or a pipe); give a YAML file")
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist; give a preset name ({', '.join(preset_names())})")
        if not os.access(p, os.R_OK):
            raise ConfigError(f"config file {p} exists but cannot be read (permission denied); check its permissions")
    else:
        p = presets_dir() / f"{spec}.yaml"
        if not p.is_file():
            raise ConfigError(
                f"unknown preset {str(spec)!r}{did_you_mean(str(spec), preset_names())}; choose one of: "
                f"{', '.join(preset_names())} or a .yaml path"
            )
    return read_yaml_mapping(p, "config file")


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (YAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if isinstance(key, str | int | float | bool) and key in seen:
                raise _DuplicateKey(f"key {key!r} is given twice (lines {seen[key]} and {line}); keep one")
            if isinstance(key, str | int | float | bool):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


class _DuplicateKey(Exception):
    """A mapping of a YAML file with a key given twice (the message names it and both lines)."""


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
        raw = yaml.load(text, Loader=_UniqueKeyLoader)
    except _DuplicateKey as e:
        raise ConfigError(f"{what} {p}: {e}") from None
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
            f"{what} {p} holds a {yaml_kind(raw)}, not a mapping with task, data, model, sharing, train{hint}"
        )
    return raw


def load_config(spec: str | Path, overrides: list[str] | None = None) -> RunConfig:
    """Preset name or YAML path + ``key=value`` overrides -> validated RunConfig (cut to a smoke test when
    ``EMBTIE_CHEAP`` is set: ``embtie.cheap``)."""
    raw = read_spec(spec)
    file_raw = copy.deepcopy(raw)
    for o in overrides or []:
        k, v = parse_override(o)
        set_dotted(raw, k, v)
    for o in cheap.overrides(raw):  # EMBTIE_CHEAP: a smoke test of the same command (embtie.cheap)
        k, v = parse_override(o)
        set_dotted(raw, k, v)
    try:
        cfg = config_from_dict(raw)
        given = [parse_override(o)[0] for o in overrides or []]
        if spec not in preset_names():  # the user's own file: a value away from the default is theirs too
            given += [f"train.{k}" for k in (file_raw.get("train") or {}) if cfg.train.differs(k)]
        cfg.train.check_given(given)
        return cfg
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
