"""The output layer of any strategy, in one canonical form.

Every strategy's logits are

    z_i = cap( s * r_i * (w_i . x) + b_i ),   x = g(h)

with ``W`` (V, d_t) the output matrix, ``r`` (V,) an optional per-row scale (1/||e_i|| for cosine,
1/||e_i||^2 for sqnorm, nGPT's learned scale), ``s`` a scalar logit scale, ``b`` (V,) a bias (learned,
and/or the distance strategy's -1/2 ||e_i||^2, already multiplied by ``s``) and ``cap`` the optional
soft-cap ``c * tanh(z / c)`` (or the sigmoid cap, ``cap_shape``:
``embtie.sharing.softcap``). ``g`` (the strategy's ``transform``) is applied before the head.

Keeping the per-row scale separate (instead of dividing the N x V logits) is what makes the
normalized strategies cost what tied costs: the scale is folded into the V x d matrix once per
step, and the memory-lean loss can apply it chunk by chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from embtie.sharing.softcap import TANH, CapShape, apply_softcap


class StructuredWeight(Protocol):
    """A fixed (V, d_t) matrix W with a fast product: ``op(x)`` = x @ W^T, ``op.transpose(dz)`` = dz @ W."""

    vocab_size: int

    def __call__(self, x: Tensor) -> Tensor: ...

    def transpose(self, dz: Tensor) -> Tensor: ...


@dataclass
class Head:
    """Output layer tensors of one forward pass (recomputed each step; gradients flow through them)."""

    weight: Tensor
    """(V, d_t) output matrix before scales."""
    row_scale: Tensor | None = None
    """(V,) per-row multiplier, or None."""
    norm_power: float | None = None
    """p: when set, the per-row scale also has the factor ||w_i||^p (row norms of ``weight``), e.g.
    -1 for cosine, -2 for sqnorm. Kept symbolic so that the memory-lean loss computes it, and its
    gradient, without (V, d_t) autograd temporaries."""
    bias: Tensor | None = None
    """(V,) additive bias (already in logit units), or None."""
    sqnorm_bias: Tensor | float | None = None
    """c: when set, the bias also has the term c ||w_i||^2 (the distance strategy's -s/2 ||e_i||^2;
    a 0-d tensor when the logit scale is learned). Kept symbolic like ``norm_power``."""
    scale: Tensor | float | None = None
    """scalar logit scale (a 0-d tensor when learned), or None."""
    softcap: float | None = None
    """c, the height of the cap (c * tanh(z / c) by default), or None."""
    cap_shape: CapShape | None = None
    """the cap's form: tanh (None), or sigmoid with its scale and shift (``embtie.sharing.softcap``). None
    rather than a CapShape default: torch 2.11's Dynamo cannot wrap a user object as a default value."""
    structured: StructuredWeight | None = None
    """A fast stand-in for ``weight`` (a fixed buffer; no row_scale), e.g. hadamard's Walsh-Hadamard
    transform; when set, logits are computed as structured(s * x) + b instead of the matmul."""
    factor: Tensor | None = None
    """(r, d_t) B of a factorized output matrix (ALBERT): the rows are those of ``weight`` (V, r) @ B,
    and every row norm, scale and bias refers to them (``matrix``). The memory-lean loss folds B into
    the hidden side (``embtie.sharing.factorized.fold_factor``) and never forms the (V, d_t) product."""
    z_loss: float = 0.0
    """lambda of the z-loss lambda * log^2 Z per token (PaLM), added to the cross-entropy by the losses."""

    @property
    def cap_form(self) -> CapShape:
        """The cap's shape, tanh when ``cap_shape`` is None."""
        return TANH if self.cap_shape is None else self.cap_shape

    @property
    def vocab_size(self) -> int:
        return self.weight.shape[0]

    def matrix(self) -> Tensor:
        """(V, d_t) the output matrix before scales: ``weight``, or weight @ factor when factorized."""
        return self.weight if self.factor is None else self.weight @ self.factor

    def full_row_scale(self) -> Tensor | None:
        """(V,) the per-row scale with the row-norm factor ||w_i||^p applied (autograd), or None."""
        if self.norm_power is None:
            return self.row_scale
        n = row_norm(self.matrix())
        r = n.reciprocal() if self.norm_power == -1 else n.pow(self.norm_power)
        if self.row_scale is None:
            return r
        return self.row_scale / n if self.norm_power == -1 else self.row_scale * r

    def combined_row_scale(self) -> Tensor | float | None:
        """The per-row scale times the scalar scale: (V,) tensor, scalar, or None."""
        r = self.full_row_scale()
        if r is None:
            return self.scale
        if self.scale is None:
            return r
        return r * self.scale

    def effective_weight(self) -> Tensor:
        """(V, d_t) the matrix whose rows the logits are taken against (all scales folded in)."""
        m = self.combined_row_scale()
        w = self.matrix()
        if m is None:
            return w
        if isinstance(m, Tensor) and m.dim() == 1:
            return w * m.unsqueeze(1).to(w.dtype)
        return w * m

    def full_bias(self) -> Tensor | None:
        """(V,) the bias with the c ||w_i||^2 term added (autograd), or None."""
        if self.sqnorm_bias is None:
            return self.bias
        term = self.matrix().pow(2).sum(dim=-1) * self.sqnorm_bias
        return term if self.bias is None else term + self.bias

    def logits(self, x: Tensor) -> Tensor:
        """x: (..., d_t) transformed hidden states -> (..., V) logits."""
        if self.structured is not None and self.row_scale is None and self.norm_power is None:
            z = self.structured(x if self.scale is None else x * self.scale)
            if self.bias is not None:
                z = z + self.bias
            return apply_softcap(z, self.softcap, self.cap_form)
        z = F.linear(x, self.effective_weight(), self.full_bias())
        return apply_softcap(z, self.softcap, self.cap_form)


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype reductions over a tensor of ``dtype`` accumulate in: at least float32 (float32 for
    float32, bfloat16 and float16; float64 for float64)."""
    return torch.promote_types(dtype, torch.float32)


def compute_dtype(x: Tensor) -> torch.dtype:
    """The dtype the logits' matmul runs in: the autocast dtype where autocast is on for x's device, else x's."""
    device = x.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype


def row_norm(w: Tensor, eps: float = 1e-12) -> Tensor:
    """(V, d) -> (V,) L2 norm of each row, accumulated in at least float32 (no float copy of w), clamped
    away from zero."""
    return torch.linalg.vector_norm(w, dim=-1, dtype=accumulation_dtype(w.dtype)).clamp_min(eps).to(w.dtype)


__all__ = ["Head", "StructuredWeight", "accumulation_dtype", "apply_softcap", "row_norm"]
