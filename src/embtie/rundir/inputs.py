"""The files a run depends on beyond its own folder, recorded by content when the run starts (RUN_DIR/run.json).

A run reads files the user names in its config: a transformers config JSON or ``save_pretrained`` folder
(``model.hf``) and the user's own data (every ``data.*_file`` key, and ``data.source`` when it is a local
file). When the run starts, ``record`` writes each one's sha256 into the run record, ``run.json``::

    {"format": 1, "inputs": [{"key": "model.hf", "path": "/abs/gpt2.json", "sha256": "...",
                              "copy": "model-config.json"}, {"key": "data.valid_file", ...}]}

A config JSON (small) is also copied into the run (``copy``) and every later load reads the copy, so
editing the original changes nothing. Anything else is checked: ``changes`` names every recorded file whose
content is no longer the one the run started with, and loading, evaluation and analyses refuse with one
line naming it and the fix (``check``); a cached result records the digests it was computed from
(``digests``). The dataset files embtie downloads are not recorded here: their checksums are embtie's
own and every read verifies them (``embtie.data.files``). A run written before the record existed has no
run.json: its inputs are "not recorded", said once, and it loads as before.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embtie.errors import ConfigError, DataError
from embtie.files import write_atomic
from embtie.rundir.digest import file_sha256

RECORD = "run.json"
"""the run record, written when the run starts."""
FORMAT = 1
MODEL_CONFIG_COPY = "model-config.json"
"""the run's copy of a ``model.hf`` config JSON (loads read it, not the original)."""
HF_CONFIG = "config.json"
"""the file of a ``save_pretrained`` folder whose content decides the model's shape."""


@dataclass(frozen=True)
class Input:
    """One file a run read when it started: the config key naming it, its absolute path, its sha256, and
    the name of the run's copy (None: not copied, checked in place)."""

    key: str
    path: str
    sha256: str
    copy: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "path": self.path, "sha256": self.sha256, "copy": self.copy}

    @classmethod
    def from_json(cls, raw: Any) -> Input:
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("key", "path", "sha256")):
            raise ValueError("an input needs key, path and sha256")
        copy = raw.get("copy")
        return cls(raw["key"], raw["path"], raw["sha256"], copy if isinstance(copy, str) else None)


def named_files(config: dict[str, Any]) -> dict[str, Path]:
    """{config key: file} of the files a run's config (``RunConfig.to_dict()``) names outside the run: a
    ``model.hf`` config JSON (a folder: its config.json), every set ``data.*_file``, a local ``data.source``."""
    out: dict[str, Path] = {}
    hf = config.get("model", {}).get("hf")
    if isinstance(hf, str) and config.get("model", {}).get("name", "").startswith("hf"):
        p = Path(hf).expanduser()
        if p.is_dir() and (p / HF_CONFIG).is_file():
            out["model.hf"] = p / HF_CONFIG
        elif p.is_file():
            out["model.hf"] = p
    for k, v in sorted(config.get("data", {}).items()):
        if isinstance(v, str) and (k.endswith("_file") or k == "source") and Path(v).expanduser().is_file():
            out[f"data.{k}"] = Path(v).expanduser()
    return out


def record(config: dict[str, Any], run_dir: Path) -> list[Input]:
    """Hash every file ``config`` names (``named_files``), copy a model config JSON into the run, and write
    RUN_DIR/run.json. The list of what was recorded."""
    inputs = []
    for key, path in named_files(config).items():
        copy = None
        if key == "model.hf" and not Path(config["model"]["hf"]).expanduser().is_dir():  # a config JSON: copied
            copy = MODEL_CONFIG_COPY
            shutil.copyfile(path, Path(run_dir) / copy)
        digest = file_sha256(Path(run_dir) / copy if copy else path)
        inputs.append(Input(key, str(path.resolve()), digest, copy))
    text = json.dumps({"format": FORMAT, "inputs": [i.to_json() for i in inputs]}, indent=1)
    write_atomic(Path(run_dir) / RECORD, text)
    return inputs


def read(run_dir: Path) -> list[Input] | None:
    """The inputs recorded in RUN_DIR/run.json; None when the run has no record (written by older code)."""
    p = Path(run_dir) / RECORD
    if not p.is_file():
        return None
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
        return [Input.from_json(i) for i in raw["inputs"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{p} is damaged ({e}); restore it, or train the run again into a new --out") from None


def _now(inp: Input, run_dir: Path) -> str | None:
    """The sha256 of what a load reads for ``inp`` now (the run's copy when it has one); None: missing."""
    p = Path(run_dir) / inp.copy if inp.copy else Path(inp.path)
    try:
        return file_sha256(p)
    except OSError:
        return None


def changes(run_dir: Path, inputs: list[Input] | None = None) -> list[str]:
    """One sentence per recorded input whose content is no longer the one the run started with (empty: all
    current, or nothing recorded)."""
    found = read(run_dir) if inputs is None else inputs
    out = []
    for inp in found or []:
        now = _now(inp, run_dir)
        where = f"the run's copy {Path(run_dir) / inp.copy} of " if inp.copy else ""
        if now is None:
            out.append(f"{where}{inp.key} {inp.path} is gone (sha256 {inp.sha256[:12]} recorded when the run started)")
        elif now != inp.sha256:
            out.append(
                f"{where}{inp.key} {inp.path} changed since the run started (sha256 {inp.sha256[:12]} recorded, "
                f"now {now[:12]})"
            )
    return out


def check(run_dir: Path) -> None:
    """A ConfigError naming the first input that changed since the run started, and the fix."""
    found = changes(run_dir)
    if found:
        raise ConfigError(f"{run_dir}: {found[0]}; restore that file, or train a run on the new one into a new --out")


def digests(run_dir: Path) -> dict[str, str]:
    """{config key: sha256} of the run's recorded inputs (what a result computed now was computed from)."""
    return {i.key: i.sha256 for i in read(run_dir) or []}


_SAID: set[str] = set()


def loaded_config(raw: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The config mapping of a run as loading reads it: ``model.hf`` pointed at the run's copy when it has one
    (the original may have been edited or removed since). A run without a record that names files of its
    own says once on stderr that its inputs were not recorded."""
    found = read(run_dir)
    if found is None:
        if named_files(raw) and str(run_dir) not in _SAID:
            _SAID.add(str(run_dir))
            print(f"note: {run_dir}: its input files were not recorded (run.json, older embtie); they are read "
                  "as they are now", file=sys.stderr)  # fmt: skip
        return raw
    for inp in found:
        if inp.key == "model.hf" and inp.copy and isinstance(raw.get("model"), dict):
            raw = {**raw, "model": {**raw["model"], "hf": str(Path(run_dir) / inp.copy)}}
    return raw
