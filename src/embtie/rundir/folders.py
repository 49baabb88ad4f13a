"""The folders a command reads and writes: a run's config read before anything heavier, the ``--out``
folder checked before anything is written, and the held-out files that are copies of the training text
(used by ``embtie train``, ``embtie compare`` and ``embtie.experiment``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from embtie.errors import ConfigError

if TYPE_CHECKING:
    from embtie.config import RunConfig


def read_run_config(run_dir: str | Path) -> RunConfig:
    """The config of a run directory, read before anything heavier: a damaged config.yaml is a one-line
    ConfigError naming the file (a missing one: "not a run directory", from ``embtie.rundir.loading.read_config``)."""
    from embtie.config import config_from_dict, read_yaml_mapping
    from embtie.rundir import inputs
    from embtie.rundir.loading import read_config

    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return read_config(run_dir)
    raw = inputs.loaded_config(read_yaml_mapping(path, "run config"), Path(run_dir))
    try:
        return config_from_dict(raw)
    except ConfigError as e:
        raise ConfigError(f"run config {path}: {e}") from None


def check_out_dir(out: Path) -> None:
    """``--out`` must be a folder (new or existing) under a folder this process can write to."""
    if out.exists():
        if not out.is_dir():
            raise ConfigError(f"--out {out} is a file, not a folder; give a new folder or an existing run directory")
        if (out / "config.yaml").exists():
            read_run_config(out)  # a damaged config.yaml of the run to resume: one line naming it
        return
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"--out {out}: {parent} is a file, not a folder; give a path under a folder")
    effective = os.access in os.supports_effective_ids  # the permissions this process acts with
    if not os.access(parent, os.W_OK | os.X_OK, effective_ids=effective):
        raise ConfigError(f"--out {out}: cannot create it, {parent} is not writable; choose a folder you can write to")


def held_out_copies(data: object) -> list[tuple[str, str, str]]:
    """(held-out key, training key, path) for every validation or test file of a data section (a dataclass
    with ``train_file``/``valid_file``, ``train_src_file``/``test_src_file``, ...) that is the training file
    itself or a byte-for-byte copy of it."""
    import dataclasses
    import filecmp

    if not dataclasses.is_dataclass(data):
        return []
    values = {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}  # foreign: a declared dataclass
    out = []
    for key, path in values.items():
        prefix = next((p for p in ("valid", "test") if key.startswith(p + "_") and key.endswith("_file")), None)
        if prefix is None:
            continue
        train_key = "train" + key[len(prefix) :]
        train = values.get(train_key)
        if not (isinstance(path, str) and isinstance(train, str)):
            continue
        a, b = Path(path).expanduser(), Path(train).expanduser()
        if a.is_file() and b.is_file() and (os.path.samefile(a, b) or filecmp.cmp(a, b, shallow=False)):
            out.append((f"data.{key}", f"data.{train_key}", path))
    return out


def warn_held_out_copies(data: object) -> None:
    """One warning line on stderr for each held-out file that is the training text (its perplexity measures
    memorisation, not generalisation); the command goes on."""
    for key, train_key, path in held_out_copies(data):
        print(
            f"embtie: warning: {key} ({path}) is the same text as {train_key}: its perplexity measures how well "
            "the model memorised its training text, not how it generalises; give held-out text",
            file=sys.stderr,
        )
