"""Run directories loaded back: config, task (vocabulary), model with a checkpoint's weights, summary.

A run directory (written by ``embtie.training.api.train``) holds config.yaml, vocab.json, metrics.jsonl,
checkpoints/ (see ``embtie.rundir.checkpoints``) and, once finished, summary.json. Everything that reads a
trained run — evaluation, decoding, analysis, comparisons — loads it through this module::

    from embtie.rundir.loading import load_run
    run = load_run("runs/l2norm")            # run.config, run.model (run.model.sharing), run.task
    run.task.evaluate(run.model, "valid")    # {"loss", "ppl", "tokens", ...}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from embtie import tasks
from embtie.config import RunConfig, config_from_dict, read_yaml_mapping
from embtie.errors import ConfigError
from embtie.rundir import checkpoints, inputs, provenance
from embtie.tasks.base import Task


@dataclass
class Run:
    """A trained run loaded back: its config, model (strategy at ``model.sharing``), task and summary, and
    the checkpoint its weights came from (with the sha256 of that model.safetensors)."""

    config: RunConfig
    model: nn.Module
    task: Task
    summary: dict[str, Any] | None
    checkpoint: Path
    model_sha256: str = ""

    def source(self) -> provenance.Source:
        """Where this run's weights came from, for the provenance of what is computed from them."""
        return provenance.Source.of(self.checkpoint, self.model_sha256 or None)


def read_config(run_dir: str | Path) -> RunConfig:
    """The config of a run directory (its config.yaml), validated; a ``model.hf`` config JSON is the run's
    copy of it (``embtie.rundir.inputs``)."""
    d = Path(run_dir)
    cfg_path = d / "config.yaml"
    if not cfg_path.is_file():
        raise ConfigError(f"{d} is not a run directory (no config.yaml); give the --out folder of `embtie train`")
    return config_from_dict(inputs.loaded_config(read_yaml_mapping(cfg_path, "run config"), d))


LOAD_ATTEMPTS = 3
"""how often loading picks the newest checkpoint again when training removed the one it picked."""


def load_run(run_dir: str | Path, device: str | torch.device = "cpu", checkpoint: Path | None = None) -> Run:
    """Load a run directory: its config, its task (vocabulary from vocab.json) and its model with the
    weights of ``checkpoint`` (default: the newest complete checkpoint; tied tensors stay one tensor), in
    eval mode on ``device``. The run may be training meanwhile: a checkpoint it removes while this reads is
    replaced by the then newest. Weights that do not fit the model or are not finite are a one-line
    CheckpointError (``embtie.rundir.checkpoints.load_weights``). An input file recorded when the run started
    (``embtie.rundir.inputs``) whose content changed since is a one-line ConfigError."""
    d = Path(run_dir)
    cfg = read_config(d)
    inputs.check(d)  # a file the run read beyond its folder (data, a model folder's config) changed: refused
    task: Task | None = None
    for attempt in range(LOAD_ATTEMPTS):
        ckpt = checkpoint if checkpoint is not None else checkpoints.readable(d, ("model.safetensors",), "loading")
        if ckpt is None:
            raise ConfigError(f"{d} has no checkpoint yet; train it first with `embtie train ... --out {d}`")
        task = task or tasks.get(cfg.task).load(cfg, d)
        model = task.build_model()
        try:
            digest = checkpoints.load_weights(model, ckpt)
        except FileNotFoundError:
            if checkpoint is not None or attempt == LOAD_ATTEMPTS - 1:
                raise
            continue
        model.to(device).eval()
        summary_path = d / "summary.json"
        summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else None
        return Run(config=cfg, model=model, task=task, summary=summary, checkpoint=ckpt, model_sha256=digest)
    raise AssertionError("unreachable")


def checkpoint_path(run_dir: str | Path, name: str | None) -> Path | None:
    """A checkpoint folder of a run by name (``step-00001234``, ``avg-last5``, or a path into the run's
    checkpoints/ folder); None: newest. A checkpoint of another run is refused (a ConfigError naming the run it
    belongs to): its results would be stored under this run's name."""
    if name is None:
        return None
    own = Path(run_dir) / checkpoints.CKPT
    for cand in (own / name, Path(name).expanduser()):
        if not (cand / "model.safetensors").is_file():
            continue
        if cand.resolve().parent == own.resolve():
            return own / cand.resolve().name
        other = cand.resolve().parent.parent
        raise ConfigError(
            f"--checkpoint {name} belongs to another run ({other}), not to {run_dir}: its results would be stored "
            f"under this run's name; evaluate it in its own run: `embtie eval {other} --checkpoint {cand.name}`"
        )
    have = [p.name for p in own.glob("*") if (p / "model.safetensors").is_file()]
    raise ConfigError(f"no checkpoint {name!r} in {run_dir}; choose one of: {', '.join(sorted(have)) or 'none'}")


def load_for_decoding(run_dir: str | Path, name: str | None = None, device: str = "cpu") -> Run:
    """``load_run`` with the weights of checkpoint ``name`` (e.g. ``avg-last5``) when given (only those
    weights are read: a damaged newest checkpoint does not stop loading an older one by name)."""
    read_config(run_dir)
    return load_run(run_dir, device=device, checkpoint=checkpoint_path(run_dir, name))
