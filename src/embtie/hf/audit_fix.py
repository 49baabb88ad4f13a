"""repair(): the corrected copy of a checkpoint that ``embtie.hf.audit`` found wrong, written to a new folder
(never in place).

Every file of the folder is copied; config.json gets the tie flag the verdict calls for, and only the weight
file(s) that hold the input embedding or output layer are rewritten (the others are copied byte for byte).
The copy is audited again before repair() returns, and must come out consistent. An embtie save is
repaired by ``embtie.hf.export`` (stock weights).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from safetensors.torch import load_file, save_file

from embtie.errors import ConfigError, DataError
from embtie.hf.audit import Audit, audit
from embtie.hf.checkpoint_files import CONFIG, WEIGHTS_INDEX
from embtie.hf.families import FAMILIES

TIE_FROM = ("input", "output")
CONSISTENT = {"consistent-tied", "consistent-untied", "embtie-export", "untied-equal-copies", "peft-merged"}


def _check_out(source: Path, out: Path) -> None:
    if out.resolve() == source.resolve():
        raise ConfigError(f"--fix {out} is the checkpoint itself; give a new folder (hf-audit never fixes in place)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--fix {out} exists and is not empty; give a new or empty folder")


def _plan(found: Audit, tie_from: str | None) -> tuple[bool, str | None] | None:
    """(tie flag to write, which matrix to keep tied: "input"/"output", or None to keep the tensors as they
    are), or None when there is nothing to fix."""
    v = found.verdict
    if v == "no-embedding":
        raise DataError(f"{found.path} holds neither the input embedding nor the output layer; nothing can fix that")
    if tie_from is not None:
        if v not in ("flag-tied-diverged", "peft-merged", "consistent-untied", "untied-equal-copies"):
            raise ConfigError(f"--tie-from is for a checkpoint with two matrices; {found.path} is {v}")
        return True, tie_from
    if v == "flag-tied-diverged":
        fam = FAMILIES.get(found.model_type)
        if fam is not None and fam.head_always_tied:
            raise ConfigError(
                f"transformers always ties {found.architecture}'s head to its input table, so the two matrices "
                "cannot be kept apart; choose the one to keep with --tie-from input or --tie-from output"
            )
        return False, None
    if v in ("tied-missing-key", "tied-on-disk-untied-in-config"):  # one key held: move it to the input's
        return True, "output" if found.held_input is None else None
    if v == "untied-equal-copies":
        return True, "input"
    return None


def _write_config(source: Path, out: Path, tie: bool) -> None:
    raw: dict[str, Any] = json.loads((source / CONFIG).read_text(encoding="utf-8"))
    raw["tie_word_embeddings"] = tie
    for value in raw.values():
        if isinstance(value, dict) and "tie_word_embeddings" in value:  # a nested text_config
            value["tie_word_embeddings"] = tie
    (out / CONFIG).write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _retie_weights(found: Audit, out: Path, keep: str) -> None:
    """Store the kept matrix under the first input key only (as save_pretrained writes a tied model)."""
    kept_key = found.held_input if keep == "input" else found.held_output
    assert kept_key is not None
    drop = set(found.files)
    files = sorted(set(found.files.values()))
    matrix = load_file(str(found.path / found.files[kept_key]))[kept_key]
    target = found.input_keys[0]
    target_file = found.files[found.held_input or kept_key]
    for name in files:
        state = {k: v for k, v in load_file(str(found.path / name)).items() if k not in drop}
        if name == target_file:
            state[target] = matrix.contiguous()
        save_file(state, str(out / name), metadata={"format": "pt"})
    if (found.path / WEIGHTS_INDEX).is_file():
        index = json.loads((found.path / WEIGHTS_INDEX).read_text(encoding="utf-8"))
        weight_map = {k: v for k, v in index["weight_map"].items() if k not in drop}
        weight_map[target] = target_file
        index["weight_map"] = dict(sorted(weight_map.items()))
        (out / WEIGHTS_INDEX).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")


def _copy_folder(source: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_dir():
            shutil.copytree(item, out / item.name)
        else:
            shutil.copy2(item, out / item.name)


def _export(found: Audit, out: Path) -> Audit:
    from embtie.hf.loading import load
    from embtie.hf.stock_weights import export
    from embtie.hf.tokenizer_files import copy_tokenizer_files

    export(load(found.path), out)
    copy_tokenizer_files(found.path, out)
    return audit(out)


def repair(found: Audit, out: str | Path, tie_from: str | None = None) -> Audit | None:
    """Write the corrected copy of ``found.path`` to ``out``; returns its audit, or None when there was nothing
    to fix (nothing written). ``tie_from``: "input" or "output", the matrix to keep when tying two."""
    out = Path(out)
    _check_out(found.path, out)
    if tie_from is not None and tie_from not in TIE_FROM:
        raise ConfigError(f"--tie-from {tie_from!r} must be one of: {', '.join(TIE_FROM)}")
    if found.verdict == "embtie-save":
        return _export(found, out)
    plan = _plan(found, tie_from)
    if plan is None:
        return None
    tie, keep = plan
    _copy_folder(found.path, out)
    _write_config(found.path, out, tie)
    if keep is not None:
        _retie_weights(found, out, keep)
    fixed = audit(out)
    if fixed.verdict not in CONSISTENT or fixed.tie_flag is not tie:
        raise RuntimeError(f"hf-audit --fix wrote {out}, which audits as {fixed.verdict}; please report this")
    return fixed
