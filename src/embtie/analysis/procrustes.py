"""How similar two embedding matrices are up to a rotation: orthogonal Procrustes, then row cosines.

Press & Wolf's update-dynamics argument predicts that a tied matrix ends up closer to an untied
model's *output* matrix than to its *input* matrix. Two separately trained models only agree up to an
orthogonal change of basis, so B is first rotated onto A:

    R* = argmin_{R orthogonal} ||B R - A||_F = U V^T,  where  U S V^T = svd(B^T A)

and the similarity is the mean over rows of cos(A_i, (B R*)_i).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def procrustes_rotation(a: Tensor, b: Tensor) -> Tensor:
    """(d, d) orthogonal R minimising ||b R - a||_F for a, b of shape (V, d)."""
    u, _, vh = torch.linalg.svd(b.T @ a)
    return u @ vh


def aligned_row_cosines(a: Tensor, b: Tensor) -> Tensor:
    """(V,) cos(a_i, (b R*)_i) after rotating b onto a (float64; 0 for a zero row)."""
    if a.shape != b.shape or a.dim() != 2:
        raise ValueError(f"need two (V, d) matrices of the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    a64, b64 = a.detach().double().cpu(), b.detach().double().cpu()
    rb = b64 @ procrustes_rotation(a64, b64)
    num = (a64 * rb).sum(dim=1)
    den = a64.norm(dim=1) * rb.norm(dim=1)
    return torch.where(den > 0, num / den.clamp_min(1e-300), torch.zeros_like(num))


def similarity(a: Tensor, b: Tensor, counts: np.ndarray | None = None, top: int = 1000) -> dict[str, float]:
    """{"all": mean aligned row cosine over all rows, "frequent": over the ``top`` most frequent rows
    (by training ``counts``; absent when counts are unknown)}; the rotation is fitted on all rows."""
    cos = aligned_row_cosines(a, b).numpy()
    out = {"all": float(cos.mean())}
    if counts is not None and len(counts) == len(cos):
        idx = np.argsort(-np.asarray(counts), kind="stable")[: min(top, len(cos))]
        out["frequent"] = float(cos[idx].mean())
    return out
