"""Norms of input and output vectors (Liu et al., Figure 2): histogram data, from tensors or saved files."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from embtie.sharing.base import SharingStrategy


def row_norms(vectors: Tensor) -> np.ndarray:
    """(V, d) vectors -> (V,) float64 array of their L2 norms."""
    if vectors.dim() != 2:
        raise ValueError(f"expected a (V, d) matrix, got shape {tuple(vectors.shape)}")
    return vectors.detach().double().norm(dim=1).cpu().numpy()


def norm_histogram(norms: np.ndarray, bins: int = 40, value_range: tuple[float, float] | None = None) -> dict:
    """Histogram of a (V,) norm array: {"edges": (bins+1,), "counts": (bins,), "mean", "std", "min", "max"}.

    ``value_range`` fixes the bin range (to draw several histograms on one axis); by default it is
    [min, max] of the data (a degenerate range, e.g. all norms 1, is widened by 1e-6 on both sides).
    """
    norms = np.asarray(norms, dtype=np.float64)
    if norms.ndim != 1 or norms.size == 0:
        raise ValueError("norm_histogram needs a non-empty 1-D array")
    lo, hi = value_range if value_range is not None else (float(norms.min()), float(norms.max()))
    if hi - lo < 1e-9:
        lo, hi = lo - 1e-6, hi + 1e-6
    counts, edges = np.histogram(norms, bins=bins, range=(lo, hi))
    return {
        "edges": edges.tolist(),
        "counts": counts.tolist(),
        "mean": float(norms.mean()),
        "std": float(norms.std()),
        "min": float(norms.min()),
        "max": float(norms.max()),
    }


def input_output_norms(sharing_module: SharingStrategy) -> dict[str, np.ndarray]:
    """{"input": (V,), "output": (V,)} effective input- and output-vector norms of a sharing strategy.

    Uses ``input_vectors()`` (after normalization and embed_scale) and ``output_vectors()`` (all logit
    scales folded in), i.e. the vectors the model actually uses on each side.
    """
    with torch.no_grad():
        return {
            "input": row_norms(sharing_module.input_vectors()),
            "output": row_norms(sharing_module.output_vectors()),
        }
