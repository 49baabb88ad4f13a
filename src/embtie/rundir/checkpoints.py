"""Checkpoints of a run directory, written atomically.

Layout::

    RUN_DIR/checkpoints/step-00001234/
        model.safetensors     weights; tensors shared between modules are stored once and re-tied
                              on load (safetensors.torch.save_model / load_model semantics)
        optim.safetensors     optimizer tensors (Adam moments, step counters, SGD momentum)
        rank{r}.safetensors   per-process tensors: RNG states, carried hidden state
        state.json            step, data position, optimizer scalars and param groups, schedule,
                              counters, the metrics.jsonl length at this step
    RUN_DIR/checkpoints/latest    name of the newest complete checkpoint

A checkpoint is written into a hidden temporary folder, renamed into place with ``os.replace`` and
only then named in ``latest`` (itself replaced atomically), so a process killed at any moment leaves
the previous checkpoint intact and pointed to.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load as load_bytes
from safetensors.torch import load_file, save_model
from torch import Tensor, nn

from embtie.errors import EmbtieError
from embtie.files import os_errors, save_tensors, write_atomic

CKPT = "checkpoints"
LATEST = "latest"


class CheckpointError(EmbtieError):
    """No readable checkpoint where one is needed; the message names the file and what to do."""


def save_model_file(model: nn.Module, path: Path) -> None:
    """``safetensors.torch.save_model`` (shared tensors stored once) with a failed write raised as an OSError."""
    with os_errors(path):
        save_model(model, str(path))


def latest(run_dir: Path) -> Path | None:
    """The newest complete checkpoint folder of a run, or None."""
    root = Path(run_dir) / CKPT
    p = root / LATEST
    if not p.is_file():
        return None
    try:
        name = p.read_bytes().decode("utf-8").strip()
    except UnicodeDecodeError:  # damaged: the newest step checkpoint on disk is found by ``candidates``
        return None
    if not name or "/" in name or "\x00" in name:
        return None
    d = root / name
    return d if (d / "state.json").is_file() else None


def candidates(run_dir: Path) -> list[Path]:
    """Every step checkpoint folder of a run, newest first: the one named in ``latest`` (when it
    exists), then the others by step, newest first."""
    root = Path(run_dir) / CKPT
    if not root.is_dir():
        return []
    steps = sorted((p for p in root.glob("step-*") if p.is_dir()), reverse=True)
    named = latest(run_dir)
    return [named, *(p for p in steps if p != named)] if named is not None else steps


def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def unreadable(ckpt: Path, files: tuple[str, ...]) -> str | None:
    """None when every file in ``files`` of checkpoint folder ``ckpt`` can be read, else the reason."""
    for name in files:
        f = Path(ckpt) / name
        try:
            if name.endswith(".json"):
                json.loads(f.read_text(encoding="utf-8"))
            else:
                load_file(str(f))
        except Exception as e:  # any failure to read means: not usable
            return f"{f.name}: {_why(e)}"
    return None


def readable(run_dir: Path, files: tuple[str, ...], what: str) -> Path | None:
    """The newest checkpoint whose ``files`` can all be read, warning (one line on stderr) when newer
    ones could not; None when the run has no checkpoint; a CheckpointError when none is readable."""
    found = candidates(run_dir)
    bad: list[str] = []
    for ckpt in found:
        reason = unreadable(ckpt, files)
        if reason is None:
            if bad:
                print(f"embtie: warning: {bad[0]} is unreadable; {what} the older {ckpt.name}", file=sys.stderr)
            return ckpt
        bad.append(f"checkpoint {ckpt} ({reason})")
    if bad:
        raise CheckpointError(
            f"no readable checkpoint in {run_dir}: {bad[0]}"
            + (f" and {len(bad) - 1} older" if len(bad) > 1 else "")
            + "; restore the files, or move checkpoints/ away to start the run over"
        )
    return None


def save_named(run_dir: Path, name: str, model: nn.Module, info: dict[str, Any]) -> Path:
    """The weights alone as RUN_DIR/checkpoints/NAME/model.safetensors (e.g. ``best``; each file replaced
    atomically), with ``info`` in info.json; ``embtie eval/translate --checkpoint NAME`` loads them."""
    d = Path(run_dir) / CKPT / name
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".model.safetensors.tmp{os.getpid()}"
    try:
        save_model_file(model, tmp)
        os.replace(tmp, d / "model.safetensors")
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    write_atomic(d / "info.json", json.dumps(info, indent=1))
    return d


def tmp_dir(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CKPT / f".tmp-step-{step:08d}"


def begin(run_dir: Path, step: int) -> Path:
    """Create (empty) the temporary folder of the checkpoint at ``step``."""
    d = tmp_dir(run_dir, step)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def save_rank(d: Path, rank: int, tensors: dict[str, Tensor]) -> None:
    save_tensors({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, d / f"rank{rank}.safetensors")


def optimizer_tensors(optimizer: torch.optim.Optimizer | dict[str, Any]) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """Optimizer (or its state_dict, keyed by parameter index) -> (tensors by "param_index.key", JSON-able rest)."""
    sd = optimizer if isinstance(optimizer, dict) else optimizer.state_dict()
    tensors: dict[str, Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"{pid}.{k}"] = v.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(pid), {})[k] = v
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def optimizer_state(tensors: dict[str, Tensor], meta: dict[str, Any]) -> dict[str, Any]:
    """Inverse of ``optimizer_tensors``: a state_dict for ``optimizer.load_state_dict``."""
    state: dict[int, dict[str, Any]] = {}
    for name, t in tensors.items():
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = t
    for pid, kv in meta["scalars"].items():
        state.setdefault(int(pid), {}).update(kv)
    groups = []
    for g in meta["param_groups"]:
        g = dict(g)
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    return {"state": state, "param_groups": groups}


def commit(
    run_dir: Path, step: int, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any], keep: int = 1
) -> Path:
    """Write the shared files into the temporary folder of ``step``, move it into place, point
    ``latest`` at it, and remove older checkpoints (keeping ``keep``). Rank 0 only."""
    save_model_file(model, tmp_dir(run_dir, step) / "model.safetensors")
    return commit_gathered(run_dir, step, None, optimizer.state_dict(), state, keep=keep)


def commit_gathered(
    run_dir: Path,
    step: int,
    weights: dict[str, Tensor] | None,
    optim_state: dict[str, Any],
    state: dict[str, Any],
    keep: int = 1,
) -> Path:
    """``commit`` from state dicts gathered elsewhere (e.g. from FSDP shards): ``weights`` by parameter
    name (None: model.safetensors is already written), ``optim_state`` keyed by parameter index."""
    d = tmp_dir(run_dir, step)
    if weights is not None:
        save_tensors({k: v.detach().cpu().contiguous() for k, v in weights.items()}, d / "model.safetensors")
    tensors, meta = optimizer_tensors(optim_state)
    save_tensors(tensors, d / "optim.safetensors")
    (d / "state.json").write_text(json.dumps({**state, "optimizer": meta}, indent=1), encoding="utf-8")
    root = Path(run_dir) / CKPT
    final = root / f"step-{step:08d}"
    if final.exists():
        shutil.rmtree(final)
    os.replace(d, final)
    write_atomic(root / LATEST, final.name)
    cleanup(run_dir, keep=keep)
    return final


def cleanup(run_dir: Path, keep: int = 1) -> None:
    """Remove temporary folders and all but the newest ``keep`` complete checkpoints."""
    root = Path(run_dir) / CKPT
    if not root.is_dir():
        return
    cur = latest(run_dir)
    done = sorted(p for p in root.glob("step-*") if p.is_dir())
    keep_set = {p.name for p in done[-keep:]} | ({cur.name} if cur else set())
    for p in root.iterdir():
        if p.is_dir() and (p.name.startswith(".tmp-") or (p.name.startswith("step-") and p.name not in keep_set)):
            shutil.rmtree(p, ignore_errors=True)


def read_weights(path: Path) -> tuple[dict[str, Tensor], str]:
    """The tensors of a safetensors file and the sha256 of its bytes, from one read of the file (a
    checkpoint that training replaces meanwhile is read whole or not at all: FileNotFoundError)."""
    data = Path(path).read_bytes()
    return load_bytes(data), hashlib.sha256(data).hexdigest()


def load_weights(model: nn.Module, ckpt: Path, use: str = "load") -> str:
    """Load ``model.safetensors`` into ``model`` in place (tied tensors stay one tensor) and return the
    sha256 of the file. One-line CheckpointErrors: an unreadable file, tensors that do not fit the model
    (``misfit``), weights that are not finite (``nonfinite``); ``use`` ("load" or "resume") picks the advice."""
    path = Path(ckpt) / "model.safetensors"
    try:
        tensors, digest = read_weights(path)
    except FileNotFoundError:
        raise
    except Exception as e:  # unreadable file
        raise CheckpointError(f"cannot load {path} ({_why(e)}); choose another checkpoint of this run") from e
    check_weights(model, tensors, Path(ckpt), use)
    sd = model.state_dict()
    model.load_state_dict({k: v for k, v in tensors.items() if k in sd}, strict=False)  # aliases: one name each
    return digest


def check_weights(model: nn.Module, tensors: dict[str, Tensor], ckpt: Path, use: str) -> None:
    """A CheckpointError when ``tensors`` (a checkpoint's weights) do not fit ``model`` or are not finite."""
    parts = misfit(model, {k: tuple(v.shape) for k, v in tensors.items()})
    if parts:
        raise CheckpointError(
            f"checkpoint {ckpt} does not fit this run's model ({'; '.join(parts)}): it was written for another "
            f"strategy, width or vocabulary; {_fitting_advice(model, Path(ckpt), use) or _misfit_advice(use)}"
        )
    check_finite(tensors, ckpt, use)


def check_finite(tensors: dict[str, Tensor], ckpt: Path, use: str) -> None:
    """A CheckpointError naming the tensors of checkpoint ``ckpt`` that hold NaN or inf, and what to do."""
    bad = nonfinite(tensors)
    if bad:
        raise CheckpointError(
            f"checkpoint {ckpt} holds weights that are not finite: {listed(bad)}; {NOT_FROM_TRAINING}; "
            f"{_older_advice(Path(ckpt), use)}, or train the run again into a new --out"
        )


NOT_FROM_TRAINING = (
    "likely cause: the file was changed or damaged after it was written, not the learning rate (embtie's "
    "training stops before it would write a non-finite checkpoint)"
)
"""Why a checkpoint holds NaN/inf: training checks every step and the weights before each save, so such a
file was altered afterwards (or written by other code)."""

MAX_LISTED = 3
"""tensors named in one message at most (then "and N more")."""


def listed(items: list[str]) -> str:
    more = len(items) - MAX_LISTED
    return ", ".join(items[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")


def _alias_groups(sd: dict[str, Tensor]) -> list[list[str]]:
    """The names of a state dict grouped by tensor: tied weights are one tensor under several names, which
    a checkpoint stores once (safetensors' save_model)."""
    groups: dict[Any, list[str]] = {}
    for name, t in sd.items():
        key: Any = name
        if t.numel() and t.device.type != "meta":
            key = (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride())
        groups.setdefault(key, []).append(name)
    return list(groups.values())


def misfit(model: nn.Module, shapes: dict[str, tuple[int, ...]]) -> list[str]:
    """How a checkpoint's tensors (name -> shape) differ from ``model``'s: shapes that differ, tensors the
    model has and the checkpoint lacks, tensors the checkpoint has and the model lacks (empty: they fit)."""
    sd = model.state_dict()
    names = sorted(shapes)
    reshaped = [
        f"{n} is {shapes[n]} in the checkpoint, {tuple(sd[n].shape)} in the model"
        for n in names
        if n in sd and shapes[n] != tuple(sd[n].shape)
    ]
    groups = sorted(_alias_groups(sd))
    missing = [f"{g[0]} {tuple(sd[g[0]].shape)}" for g in groups if not any(n in shapes for n in g)]
    unexpected = [f"{n} {shapes[n]}" for n in names if n not in sd]
    parts = [("shapes differ", reshaped), ("missing", missing), ("unexpected", unexpected)]
    return [f"{what}: {listed(items)}" for what, items in parts if items]


def nonfinite(tensors: dict[str, Tensor]) -> list[str]:
    """``name (k NaN, j inf of n)`` for every floating tensor with a value that is not finite."""
    bad = []
    for name, t in sorted(tensors.items()):
        if not t.is_floating_point() or bool(torch.isfinite(t).all()):
            continue
        nan = int(torch.isnan(t).sum())
        inf = int((~torch.isfinite(t)).sum()) - nan
        counts = " and ".join(f"{k} {what}" for k, what in ((nan, "NaN"), (inf, "inf")) if k)
        bad.append(f"{name} ({counts} of {t.numel()} values)")
    return bad


def _others(ckpt: Path) -> list[str]:
    """The other step checkpoints of the run that ``ckpt`` belongs to, newest first."""
    if ckpt.parent.name != CKPT:
        return []
    return [p.name for p in candidates(ckpt.parent.parent) if p.name != ckpt.name]


def _older_advice(ckpt: Path, use: str) -> str:
    others = _others(ckpt)
    if use == "resume":
        if others:
            return f"resume from the older {others[0]} by moving {ckpt} away"
        return "no older checkpoint is left to resume from"
    if others:
        return f"use an older checkpoint (--checkpoint {others[0]})"
    return "no other checkpoint of this run is left"


def _fitting_advice(model: nn.Module, ckpt: Path, use: str) -> str | None:
    """When another checkpoint of the same run fits ``model`` (read from the files' headers only): the advice
    to use it, naming it; else None."""
    for name in _others(ckpt):
        path = ckpt.parent / name / "model.safetensors"
        try:
            with safe_open(str(path), framework="pt") as f:
                shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118 (not a dict)
        except (OSError, SafetensorError):
            continue
        if not misfit(model, shapes):
            if use == "resume":
                return f"the older checkpoint {name} fits: move {ckpt} away to resume from it"
            return f"the older checkpoint {name} of this run fits: give --checkpoint {name}"
    return None


def _misfit_advice(use: str) -> str:
    if use == "resume":
        return "resume with the config.yaml the run was trained with, or train this config into another --out"
    return "use the config.yaml the run was trained with, or a checkpoint written for this config"


def load_state(ckpt: Path) -> dict[str, Any]:
    return json.loads((Path(ckpt) / "state.json").read_text(encoding="utf-8"))


def load_optimizer(optimizer: torch.optim.Optimizer, ckpt: Path, state: dict[str, Any]) -> None:
    """Load ``optim.safetensors`` (a CheckpointError when its moments are not finite: resuming from them
    would give a non-finite first step)."""
    tensors = load_file(str(Path(ckpt) / "optim.safetensors"))
    bad = nonfinite(tensors)
    if bad:
        raise CheckpointError(
            f"the optimizer state of checkpoint {ckpt} is not finite: {listed(bad)}; {NOT_FROM_TRAINING}; "
            f"{_older_advice(Path(ckpt), 'resume')}, or train the run again into a new --out"
        )
    optimizer.load_state_dict(optimizer_state(tensors, state["optimizer"]))


def load_rank(ckpt: Path, rank: int) -> dict[str, Tensor]:
    return load_file(str(Path(ckpt) / f"rank{rank}.safetensors"))
