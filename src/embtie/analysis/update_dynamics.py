"""Press & Wolf's update dynamics across the runs of a comparison.

Two measurements of the claim that a tied embedding is shaped mostly by its output role:

- ``similarity_to_reference``: for every strategy's run and the ``untied`` run of the same seed, the
  Procrustes-aligned mean row cosine (``embtie.analysis.procrustes``) of the strategy's input vectors
  to the untied model's input matrix and to its output matrix. The claim predicts "output" > "input"
  for tied strategies.
- the per-run output-path gradient shares over training, measured while training
  (``train.path_probe``; ``embtie.training.path_shares``), read back here for the report.

Loading models is the slow part, so the similarities are cached in ``DIR/update_dynamics.json`` and
recomputed only when the set of runs changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embtie.analysis import path_share_file, procrustes
from embtie.analysis.json_records import Record, optional

REFERENCE = "untied"
CACHE = "update_dynamics.json"


@dataclass(frozen=True)
class SimilaritySource:
    """A run whose input vectors are compared: where it is, and its output vocabulary's training counts
    (None when unknown: then only the all-rows similarity is taken)."""

    strategy: str
    seed: int
    run_dir: str
    counts: np.ndarray | None


@dataclass(kw_only=True)
class SimilarityRow(Record):
    """Aligned mean row cosines of a strategy's input vectors to the untied run of the same seed: to its
    input and to its output vectors, over all rows and over the 1000 most frequent ones."""

    strategy: str
    seed: int
    to_input: float
    to_output: float
    to_input_frequent: float | None = optional()
    to_output_frequent: float | None = optional()


@dataclass(frozen=True)
class PathShares:
    """A run's output-path gradient shares, probed while it trained (``train.path_probe``)."""

    records: np.ndarray
    """(P, 5) [step, all rows, frequent, middle, rare third] at each probe."""
    row_shares: np.ndarray
    """(V,) each row's output-path share of its gradient over the whole run (NaN: never a gradient)."""


def _vectors(run_dir: Path) -> tuple[Any, Any]:
    import torch

    from embtie.analysis.run_diagnostics import strategy_of
    from embtie.rundir.loading import load_run

    run = load_run(run_dir)
    with torch.no_grad():
        s = strategy_of(run.model)
        return s.input_vectors().float(), s.output_vectors().float()


def similarity_rows(runs: list[SimilaritySource]) -> list[SimilarityRow]:
    """One row per (strategy, seed) with an ``untied`` run of the same seed."""
    refs = {r.seed: r for r in runs if r.strategy == REFERENCE}
    rows = []
    cache: dict[str, tuple[Any, Any]] = {}

    def vectors(d: str) -> tuple[Any, Any]:
        if d not in cache:
            cache[d] = _vectors(Path(d))
        return cache[d]

    for r in runs:
        ref = refs.get(r.seed)
        if r.strategy == REFERENCE or ref is None:
            continue
        x_in, _ = vectors(r.run_dir)
        u_in, u_out = vectors(ref.run_dir)
        if x_in.shape != u_in.shape or x_in.shape != u_out.shape:
            continue
        s_in = procrustes.similarity(u_in, x_in, r.counts)
        s_out = procrustes.similarity(u_out, x_in, r.counts)
        rows.append(
            SimilarityRow(
                strategy=r.strategy,
                seed=r.seed,
                to_input=s_in["all"],
                to_output=s_out["all"],
                to_input_frequent=s_in.get("frequent"),
                to_output_frequent=s_out.get("frequent"),
            )
        )
    return rows


def cached_similarity_rows(out_dir: Path, runs: list[SimilaritySource]) -> list[SimilarityRow]:
    """``similarity_rows`` through the cache file ``out_dir/update_dynamics.json``."""
    key = sorted([r.strategy, r.seed, str(r.run_dir)] for r in runs)
    path = Path(out_dir) / CACHE
    if path.is_file():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("key") == key:
                return [SimilarityRow.from_json(row) for row in saved["rows"]]
        except (json.JSONDecodeError, KeyError):
            pass
    rows = similarity_rows(runs)
    if out_dir and Path(out_dir).is_dir():
        from embtie.files import write_atomic

        write_atomic(path, json.dumps({"key": key, "rows": [r.to_json() for r in rows]}, indent=1))
    return rows


def read_path_shares(run_dir: Path) -> PathShares | None:
    """The run's probe records and per-row output shares, or None when it was not probed."""
    if not (Path(run_dir) / path_share_file.FILE).is_file():
        return None
    data = path_share_file.read(run_dir)
    return PathShares(records=data["records"], row_shares=path_share_file.row_output_shares(data))
