"""Factorized embeddings (ALBERT, Lan et al. 2020) for every strategy: E = A B with A (V, r), B (r, d).

The strategy's formula is applied to the effective rows e_i = a_i B (``Head.factor``): l2norm
normalizes them, cosine divides by their norms, distance subtracts half their squared norms, ...
The memory-lean loss never forms the (V, d) product. ``fold_factor`` rewrites a factorized head as an
ordinary head over A and the hidden side x B^T:

    z_i = s r_i ((A B)_i . x) + b_i = s r_i (a_i . (B x)) + b_i,

with the row norms ||(A B)_i||^2 = a_i (B B^T) a_i^T computed from the (r, r) Gram matrix, so every
V-sized tensor (the product, the norms and their gradients) is V x r.
"""

from __future__ import annotations

from dataclasses import replace

from torch import Tensor

from embtie.sharing.head import Head, accumulation_dtype


def factor_row_sqnorms(a: Tensor, b: Tensor) -> Tensor:
    """(V,) squared norms of the rows of A B, as sum_k (A (B B^T))_ik A_ik: A (V, r), B (r, d).

    Accumulated in at least float32 (V x r temporaries only; gradients flow to A and B)."""
    acc = accumulation_dtype(a.dtype)
    a32, b32 = a.to(acc), b.to(acc)
    return ((a32 @ (b32 @ b32.T)) * a32).sum(dim=-1)


def fold_factor(head: Head, x: Tensor) -> tuple[Head, Tensor]:
    """(head over A with explicit per-row scale and bias, x B^T (N, r)) computing the same logits as a
    factorized ``head`` on x (N, d_t) without the (V, d_t) product.

    The row-norm power p becomes an explicit row scale r_i ||(A B)_i||^p and the squared-norm bias
    c ||(A B)_i||^2 an explicit bias; both are computed by autograd from V x r tensors."""
    if head.factor is None:
        return head, x
    a, b = head.weight, head.factor
    row_scale, bias = head.row_scale, head.bias
    if head.norm_power is not None or head.sqnorm_bias is not None:
        sq = factor_row_sqnorms(a, b)
        if head.norm_power is not None:
            n = sq.clamp_min(1e-24).sqrt()  # the clamp of row_norm (1e-12), before the square root
            part = (n.reciprocal() if head.norm_power == -1 else n.pow(head.norm_power)).to(a.dtype)
            row_scale = part if row_scale is None else row_scale * part
        if head.sqnorm_bias is not None:
            term = (sq * head.sqnorm_bias).to(a.dtype)
            bias = term if bias is None else bias + term
    folded = replace(head, factor=None, row_scale=row_scale, norm_power=None, bias=bias, sqnorm_bias=None)
    return folded, x @ b.T.to(x.dtype)
