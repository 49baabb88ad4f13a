"""All diagnostics of one trained run, computed once from its saved checkpoint and written to files
(``RUN_DIR/analysis/diagnostics.json`` and ``arrays.npz``); reports and plots read those files only.

diagnostics.json holds: strategy and sizes, step-0 loss (measured by training, Su's prediction, ln V),
parameter counts, norm histograms of input and output vectors, Spearman's rho of norm vs train
frequency, word similarity of input vs output vectors, row-update frequencies of both paths, the
valid loss per evaluation unit summary, and the task's quality diagnostics (translation: BLEU and
vocabulary usage; captioning: COCO scores, vocabulary usage and the captions). arrays.npz holds the
per-token arrays behind them.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from embtie import sharing
from embtie.analysis import eval_units, frequency, norms, param_counts, row_updates, wordsim
from embtie.tasks.capabilities import Captions, Translates

ANALYSIS_DIR = "analysis"
VERSION = 1


def su_prediction(name: str, options: dict, vocab_size: int, dim: int) -> dict:
    """Su's predicted step-0 loss for a freshly initialised strategy (simple and refined), and ln V."""
    from embtie.analysis import initial_loss

    s = sharing.build(name, vocab_size=vocab_size, dim=dim, **options)
    m = s.step0_moments()
    return {
        "predicted": initial_loss.predicted_loss(m, vocab_size),
        "predicted_refined": initial_loss.predicted_loss_refined(m, vocab_size),
        "ln_v": math.log(vocab_size),
    }


def update_batches(task: Any, model: nn.Module, n: int, device: torch.device):
    """(loss_fn, batches) for the first ``n`` training batches of epoch 0, as training sees them."""
    n = min(n, task.steps_per_epoch(1))
    batches = [task.train_batch(0, i, 0, 1, device) for i in range(n)]
    state = {"carry": task.init_carry(model, 0, 1, device)}

    def loss_fn(batch):
        step, carry = task.loss(model, batch, state["carry"])
        state["carry"] = carry.detach() if isinstance(carry, torch.Tensor) else carry
        return step.objective

    return loss_fn, batches


def diagnose(model: nn.Module, task: Any, cfg: Any, summary: dict, n_update_batches: int = 8) -> tuple[dict, dict]:
    """(diagnostics dict, arrays dict) of a loaded model; see the module docstring."""
    t_diag = time.perf_counter()
    s = model.sharing
    v, d = s.vocab_size, s.dim
    device = next(model.parameters()).device
    diag: dict[str, Any] = {"version": VERSION, "strategy": cfg.sharing.name, "options": dict(cfg.sharing.options)}
    diag.update(vocab_size=v, dim=d, seed=cfg.seed, task=cfg.task)
    arrays: dict[str, np.ndarray] = {}

    step0 = su_prediction(cfg.sharing.name, dict(cfg.sharing.options), v, d)
    step0["measured"] = summary.get("step0_loss")
    diag["step0"] = step0
    diag["params"] = param_counts.model_parameter_counts(model, s)

    io = norms.input_output_norms(s)
    lo = min(float(io["input"].min()), float(io["output"].min()))
    hi = max(float(io["input"].max()), float(io["output"].max()))
    diag["norms"] = {k: norms.norm_histogram(a, bins=40, value_range=(lo, hi)) for k, a in io.items()}
    arrays["input_norms"], arrays["output_norms"] = io["input"], io["output"]

    counts = task.output_token_counts()
    diag["norm_frequency"] = diag["wordsim"] = diag["translation"] = None
    if isinstance(task, Translates):
        from embtie.analysis.translation_diag import diagnose_translation

        diag["translation"], mt_arrays = diagnose_translation(task, model)
        arrays.update(mt_arrays)
        diag["norm_frequency"] = {k: frequency.norm_frequency_correlation(a, arrays["counts"]) for k, a in io.items()}
        words = task.english_words()
        if words is not None:
            with torch.no_grad():
                diag["wordsim"] = wordsim.word_similarity_table(s.input_vectors(), s.output_vectors(), words)
    elif counts is not None and len(counts) == v:
        arrays["counts"] = counts
        diag["norm_frequency"] = {k: frequency.norm_frequency_correlation(a, counts) for k, a in io.items()}
        words = task.english_words()
        if words is not None:
            with torch.no_grad():
                diag["wordsim"] = wordsim.word_similarity_table(s.input_vectors(), s.output_vectors(), words)

    diag["captioning"] = None
    if isinstance(task, Captions):
        from embtie.analysis.caption_diag import diagnose_captioning

        diag["captioning"], cap_arrays = diagnose_captioning(task, model)
        arrays.update(cap_arrays)

    was = model.training
    model.train()
    loss_fn, batches = update_batches(task, model, n_update_batches, device)
    ru = row_updates.row_update_counts(s, loss_fn, batches)
    model.train(was)
    arrays["input_update_counts"], arrays["output_update_counts"] = ru.pop("input_counts"), ru.pop("output_counts")
    diag["row_updates"] = ru

    with torch.no_grad():
        units, metrics = eval_units.unit_losses(task, model, "valid")
    arrays["valid_units"] = units
    diag["valid"] = {
        "units": int(units.shape[0]),
        "tokens": int(units[:, 1].sum()),
        "loss": float(units[:, 0].sum() / units[:, 1].sum()),
        "task_metrics": {k: val for k, val in metrics.items() if isinstance(val, int | float | str)},
    }
    diag["seconds"] = time.perf_counter() - t_diag
    return diag, arrays


def write(run_dir: Path, diag: dict, arrays: dict) -> Path:
    out = Path(run_dir) / ANALYSIS_DIR
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "arrays.npz", **arrays)
    (out / "diagnostics.json").write_text(json.dumps(diag, indent=1, default=_json_default), encoding="utf-8")
    return out


def read(run_dir: Path) -> tuple[dict, dict] | None:
    """(diagnostics, arrays) of a run analysed before, or None."""
    out = Path(run_dir) / ANALYSIS_DIR
    if not (out / "diagnostics.json").is_file() or not (out / "arrays.npz").is_file():
        return None
    diag = json.loads((out / "diagnostics.json").read_text(encoding="utf-8"))
    if diag.get("version") != VERSION:
        return None
    with np.load(out / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    return diag, arrays


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o)}")
