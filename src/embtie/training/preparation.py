"""Preparing a run directory for training: its config.yaml and its run record (run.json: the content of
every file the config names outside the run, ``embtie.rundir.inputs``) are written once, and a later call
on the same directory (a resume) must bring the same config and the same file contents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from embtie import files, runtime
from embtie.config import RunConfig, config_from_dict, read_yaml_mapping
from embtie.errors import ConfigError
from embtie.rundir import inputs

RESUME_IGNORED = {"train.progress"}
"""config keys that may differ between the first call and a resuming call on the same run directory."""


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def config_diff(a: dict, b: dict) -> list[str]:
    """``key: old -> new`` for every dotted key whose value differs (RESUME_IGNORED left out)."""
    fa, fb = _flatten(a), _flatten(b)
    return [
        f"{k}: {fa.get(k)!r} -> {fb.get(k)!r}"
        for k in sorted(set(fa) | set(fb))
        if k not in RESUME_IGNORED and fa.get(k) != fb.get(k)
    ]


def prepare(cfg: RunConfig, out: Path, rt: runtime.Runtime) -> None:
    """Write ``out/config.yaml`` and ``out/run.json`` (rank 0), or check that the config there is ``cfg``
    and that the files it recorded are unchanged (a ConfigError naming the first difference otherwise)."""
    path = out / "config.yaml"
    if path.is_file():
        old = config_from_dict(read_yaml_mapping(path, "run config"))
        diff = config_diff(old.to_dict(), cfg.to_dict())
        if diff:
            raise ConfigError(
                f"{out} holds a run with another config ({diff[0]}); resume with the same config, or pass a new --out"
            )
        inputs.check(out)
    elif rt.is_main:
        out.mkdir(parents=True, exist_ok=True)
        inputs.record(cfg.to_dict(), out)  # first: a run folder holds a config.yaml only with its record
        files.write_atomic(path, cfg.to_yaml())
