"""All diagnostics of one trained run, computed once from its saved checkpoint and written to files
(``RUN_DIR/analysis/diagnostics.json`` and ``arrays.npz``); reports and plots read those files only.

diagnostics.json holds a ``RunDiagnostics`` record (``embtie.analysis.records``): strategy and sizes,
step-0 loss (measured by training, Su's prediction, ln V), parameter counts, norm histograms of input
and output vectors, Spearman's rho of norm vs train frequency, word similarity of input vs output
vectors, row-update frequencies of both paths, the valid loss per evaluation unit summary, and the
task's quality diagnostics (translation: BLEU and vocabulary usage; captioning: COCO scores, vocabulary
usage and the captions). arrays.npz holds the per-token and per-unit arrays behind them (``RunArrays``).

The files carry a version: ``read`` knows how to read each version it lists in ``READERS`` and treats
any other as not analysed (the run is analysed again). They also record the checkpoint they came from
(``RunDiagnostics.provenance``: step, sha256 of model.safetensors, command); diagnostics of an older
checkpoint than the run's newest are stale, and ``read`` computes them again, saying so in one line.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from embtie import files, sharing
from embtie.analysis import eval_units, frequency, norms, param_counts, row_updates, wordsim
from embtie.analysis.json_records import json_default
from embtie.analysis.records import (
    CaptioningQuality,
    NormFrequency,
    NormHistograms,
    ParameterCounts,
    Provenance,
    RowUpdates,
    RunArrays,
    RunDiagnostics,
    Step0Loss,
    ValidationSummary,
    WordSimilarity,
)
from embtie.rundir import inputs, provenance
from embtie.tasks.capabilities import Captions, Translates

if TYPE_CHECKING:
    from embtie.config import RunConfig
    from embtie.tasks.base import Task

ANALYSIS_DIR = "analysis"
LEVELS = ("full", "light", "none")
"""How much ``diagnose`` computes, most first. ``full``: everything. ``light``: no row updates (8 training
batches forward and backward) and no word similarity, the two that cost time without feeding a verdict.
``none``: also no per-unit validation pass, so no bootstrap over units: the verdicts come from the seeds'
own numbers (summary.json, and the task's quality scores, which every level computes)."""
VERSION = 1
READERS: dict[int, Callable[[Mapping[str, Any]], RunDiagnostics]] = {1: RunDiagnostics.from_json}
"""diagnostics.json version -> its reader; version 1 is the ``RunDiagnostics`` record as it is."""


def su_prediction(name: str, options: dict[str, Any], vocab_size: int, dim: int) -> dict[str, float]:
    """Su's predicted step-0 loss for a freshly initialised strategy (simple and refined), and ln V."""
    from embtie.analysis import initial_loss

    s = sharing.build(name, vocab_size=vocab_size, dim=dim, **options)
    m = s.step0_moments()
    return {
        "predicted": initial_loss.predicted_loss(m, vocab_size),
        "predicted_refined": initial_loss.predicted_loss_refined(m, vocab_size),
        "ln_v": math.log(vocab_size),
    }


def update_batches(
    task: Task, model: nn.Module, n: int, device: torch.device
) -> tuple[Callable[[Any], Any], list[Any]]:
    """(loss_fn, batches) for the first ``n`` training batches of epoch 0, as training sees them."""
    n = min(n, task.steps_per_epoch(1))
    batches = [task.train_batch(0, i, 0, 1, device) for i in range(n)]
    state = {"carry": task.init_carry(model, 0, 1, device)}

    def loss_fn(batch: Any) -> Any:
        step, carry = task.loss(model, batch, state["carry"])
        state["carry"] = carry.detach() if isinstance(carry, torch.Tensor) else carry
        return step.objective

    return loss_fn, batches


def strategy_of(model: nn.Module) -> sharing.SharingStrategy:
    """The model's sharing strategy (every embtie model holds it as ``model.sharing``)."""
    s = model.sharing
    if not isinstance(s, sharing.SharingStrategy):
        raise TypeError(f"model.sharing is a {type(s).__name__}, not a sharing strategy")
    return s


@dataclass
class _Vocabulary:
    """What the output vocabulary's training counts give: norm vs frequency, word similarity (or why not)."""

    counts: np.ndarray | None = None
    norm_frequency: NormFrequency | None = None
    wordsim: dict[str, WordSimilarity] | None = None
    wordsim_skipped: str | None = None


def _word_similarity(s: sharing.SharingStrategy, words: dict[str, int] | None) -> tuple[dict | None, str | None]:
    """``wordsim.available_table`` of the strategy's vectors, as records."""
    with torch.no_grad():
        raw, note = wordsim.available_table(s.input_vectors(), s.output_vectors(), words)
    return (None if raw is None else {n: WordSimilarity.from_json(v) for n, v in raw.items()}), note


def _vocabulary(
    task: Task, s: sharing.SharingStrategy, io: dict[str, np.ndarray], translates: bool, wordsims: bool = True
) -> _Vocabulary:
    """Norm vs training frequency and (with ``wordsims``) word similarity, where the task knows its output
    counts (always for translation, whose counts cover the target vocabulary)."""
    counts = task.output_token_counts()
    if counts is None or not (translates or len(counts) == s.vocab_size):
        return _Vocabulary(wordsim_skipped=wordsim.NO_COUNTS if wordsims else None)
    nf = NormFrequency.from_json({k: frequency.norm_frequency_correlation(a, counts) for k, a in io.items()})
    if not wordsims:
        return _Vocabulary(counts, nf)
    table, note = _word_similarity(s, task.english_words())
    return _Vocabulary(counts, nf, table, note)


def _row_updates(task: Task, model: nn.Module, s: sharing.SharingStrategy, n_batches: int) -> dict[str, Any]:
    """``row_updates.row_update_counts`` over the first training batches, in training mode."""
    was = model.training
    model.train()
    loss_fn, batches = update_batches(task, model, n_batches, next(model.parameters()).device)
    ru = row_updates.row_update_counts(s, loss_fn, batches)
    model.train(was)
    return ru


def _validation(task: Task, model: nn.Module) -> tuple[ValidationSummary, np.ndarray]:
    with torch.no_grad():
        units, metrics = eval_units.unit_losses(task, model, "valid")
    summary = ValidationSummary(
        units=int(units.shape[0]),
        tokens=int(units[:, 1].sum()),
        loss=float(units[:, 0].sum() / units[:, 1].sum()),
        task_metrics={k: val for k, val in metrics.items() if isinstance(val, int | float | str)},
    )
    return summary, units


def diagnose(
    model: nn.Module,
    task: Task,
    cfg: RunConfig,
    summary: Mapping[str, Any],
    n_update_batches: int = 8,
    level: str = "full",
) -> tuple[RunDiagnostics, RunArrays]:
    """The diagnostics and arrays of a loaded model at ``level`` (one of ``LEVELS``); see the module
    docstring."""
    t_diag = time.perf_counter()
    s = strategy_of(model)
    v, d = s.vocab_size, s.dim
    step0 = su_prediction(cfg.sharing.name, dict(cfg.sharing.options), v, d)
    params = param_counts.model_parameter_counts(model, s)
    io = norms.input_output_norms(s)
    lo = min(float(io["input"].min()), float(io["output"].min()))
    hi = max(float(io["input"].max()), float(io["output"].max()))
    hists = {k: norms.norm_histogram(a, bins=40, value_range=(lo, hi)) for k, a in io.items()}

    translation, quality_arrays = None, None
    if isinstance(task, Translates):
        from embtie.analysis.translation_diag import diagnose_translation

        translation, quality_arrays = diagnose_translation(task, model)
    vocab = _vocabulary(task, s, io, translation is not None, wordsims=level == "full")
    captioning: CaptioningQuality | None = None
    if isinstance(task, Captions):
        from embtie.analysis.caption_diag import diagnose_captioning

        captioning, quality_arrays = diagnose_captioning(task, model)
    ru = _row_updates(task, model, s, n_update_batches) if level == "full" else None
    valid, units = _validation(task, model) if level != "none" else (None, None)

    diag = RunDiagnostics(
        version=VERSION,
        strategy=cfg.sharing.name,
        options=dict(cfg.sharing.options),
        vocab_size=v,
        dim=d,
        seed=cfg.seed,
        task=cfg.task,
        step0=Step0Loss(**step0, measured=summary.get("step0_loss")),
        params=ParameterCounts(**params),
        norms=NormHistograms.from_json(hists),
        norm_frequency=vocab.norm_frequency,
        wordsim=vocab.wordsim,
        wordsim_skipped=vocab.wordsim_skipped,
        translation=translation,
        captioning=captioning,
        row_updates=None
        if ru is None
        else RowUpdates(
            batches=ru["batches"],
            input_rows_per_batch=ru["input_rows_per_batch"],
            output_rows_per_batch=ru["output_rows_per_batch"],
            parameters=ru["parameters"],
        ),
        valid=valid,
        seconds=time.perf_counter() - t_diag,
    )
    arrays = RunArrays(
        input_norms=io["input"],
        output_norms=io["output"],
        counts=vocab.counts,
        bleu_stats=None if quality_arrays is None else quality_arrays.bleu_stats,
        word_incidence=None if quality_arrays is None else quality_arrays.word_incidence,
        input_update_counts=None if ru is None else ru["input_counts"],
        output_update_counts=None if ru is None else ru["output_counts"],
        valid_units=units,
    )
    return diag, arrays


def write(run_dir: Path, diag: RunDiagnostics, arrays: RunArrays) -> Path:
    """Write diagnostics.json and arrays.npz, each through a temporary file and ``os.replace`` (a reader
    never sees half a file; the arrays go first, the JSON that names their checkpoint last)."""
    out = Path(run_dir) / ANALYSIS_DIR
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".arrays.npz.tmp{os.getpid()}.npz"
    try:
        arrays.save(tmp)
        os.replace(tmp, out / "arrays.npz")
    finally:
        tmp.unlink(missing_ok=True)
    text = json.dumps(diag.to_json(), indent=1, default=json_default)
    files.write_atomic(out / "diagnostics.json", text)
    return out


def read_stored(run_dir: Path) -> tuple[RunDiagnostics, RunArrays] | None:
    """The diagnostics and arrays of a run analysed before, as they are on disk, or None (not analysed, or
    by a version of the analysis this code cannot read); ``read`` also checks that they are current."""
    out = Path(run_dir) / ANALYSIS_DIR
    if not (out / "diagnostics.json").is_file() or not (out / "arrays.npz").is_file():
        return None
    raw = json.loads((out / "diagnostics.json").read_text(encoding="utf-8"))
    version = raw.get("version") if isinstance(raw, dict) else None
    reader = READERS.get(version) if isinstance(version, int) else None
    if reader is None:
        return None
    return reader(raw), RunArrays.load(out / "arrays.npz")


def stale_reason(run_dir: Path, diag: RunDiagnostics) -> str | None:
    """Why stored diagnostics no longer describe the run's newest checkpoint, or None (current, or no
    checkpoint to compare with: e.g. stored runs whose checkpoints were deleted)."""
    p = diag.provenance
    if p is None:
        return provenance.legacy_stale_reason(Path(run_dir), Path(run_dir) / ANALYSIS_DIR / "diagnostics.json")
    return provenance.stale_reason(Path(run_dir), p.checkpoint, p.model_sha256, p.inputs or {})


def current(run_dir: Path) -> tuple[RunDiagnostics, RunArrays] | None:
    """The stored diagnostics when they are current; None when there are none or (with a one-line note on
    stderr) when they are stale and must be computed again."""
    stored = read_stored(run_dir)
    return None if stored is None or _stale(run_dir, stored[0]) else stored


def _stale(run_dir: Path, diag: RunDiagnostics) -> bool:
    """Whether stored diagnostics are stale (saying why in one line on stderr)."""
    why = stale_reason(run_dir, diag)
    if why is not None:
        inputs.check(Path(run_dir))  # a file the run read changed: refused before any note says "computing again"
        print(f"embtie: note: the analysis of {run_dir} is out of date ({why}); computing it again", file=sys.stderr)
    return why is not None


def analyse(
    run_dir: Path,
    n_update_batches: int = 8,
    device: str | torch.device = "cpu",
    command: str | None = None,
    level: str = "full",
) -> tuple[RunDiagnostics, RunArrays]:
    """Load the run's newest checkpoint, compute its diagnostics at ``level`` (recording that checkpoint
    and ``command``) and write them; the run may be training meanwhile."""
    from embtie.rundir.loading import load_run

    run = load_run(run_dir, device)
    diag, arrays = diagnose(run.model, run.task, run.config, run.summary or {}, n_update_batches, level)
    diag.provenance = Provenance.from_json(run.source().to_json(command or f"embtie analyze {run_dir}"))
    write(run_dir, diag, arrays)
    return diag, arrays


def read(run_dir: Path) -> tuple[RunDiagnostics, RunArrays] | None:
    """The diagnostics and arrays of a run analysed before, or None (not analysed, or by a version of the
    analysis this code cannot read). Stored diagnostics that are out of date (the run has a newer
    checkpoint than theirs) are computed again, with a one-line note, over as many batches as before."""
    stored = read_stored(run_dir)
    if stored is None or not _stale(run_dir, stored[0]):
        return stored
    old = stored[0]
    batches = old.row_updates.batches if old.row_updates is not None else 8
    return analyse(run_dir, batches, command=f"embtie analyze {run_dir} (stale analysis)", level=old.level)


def covers(diag: RunDiagnostics, level: str) -> bool:
    """Whether diagnostics hold at least what ``level`` asks for (a full analysis covers a light one)."""
    return LEVELS.index(diag.level) <= LEVELS.index(level)
