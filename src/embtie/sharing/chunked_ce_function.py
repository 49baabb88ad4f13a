"""The autograd Function of the chunked cross-entropy (``ChunkedCrossEntropy``).

It ties the other ``chunked_ce_*`` modules together: token selection and the chunk pass
(``chunked_ce_schedule``), the effective weight and the chain rule through it (``chunked_ce_weight``).
The fused schedule computes the gradients in forward and scales them in backward; the recompute
schedule saves the inputs and runs the chunk pass again in backward (see ``embtie.sharing.chunked_ce``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from embtie.sharing.chunked_ce_config import _Config, _matrix
from embtie.sharing.chunked_ce_schedule import _augment, _folds_bias, _grad_pass, _scatter_rows, _select_tokens
from embtie.sharing.chunked_ce_weight import (
    _effective_weight,
    _row_norm_scale,
    _sqnorm_bias,
    _sqnorm_grads,
    _weight_grads,
)


class ChunkedCrossEntropy(torch.autograd.Function):
    """Mean (label-smoothed) cross-entropy of cap(x @ (m W)^T + b) over kept tokens, chunk by chunk.

    forward(x (N, d_t), weight W (V, d_t) or None when cfg.structured, bias (V,) or None,
    scale m ((V,) per-row, 0-d, or None), targets (N,) long, cfg, needs: which of (x, weight, bias,
    scale) need a gradient) -> 0-d loss in cfg.acc_dtype (float32; float64 for float64 inputs).
    With ``cfg.norm_power`` p the per-row scale is m_v = scale_v ||W_v||^p (``Head.norm_power``): the
    row norms and their gradient dL/dW_v += p m_v <dL/dW_eff[v], W_v> / ||W_v||^2 W_v are computed
    here, in place, instead of by autograd (whose norm backward allocates two fresh (V, d_t) tensors
    per step).

    The scale is applied here rather than by autograd: m W is written into a reused buffer, and the
    gradients dL/dm_v = <dL/dW_eff[v], W[v]> and dL/dW = m dL/dW_eff (in place) need no fresh
    (V, d_t) tensors, which autograd's multiply and its backward would allocate (and page-fault)
    at every step.
    """

    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        weight: Tensor | None,
        bias: Tensor | None,
        scale: Tensor | None,
        coef: Tensor | None,
        targets: Tensor,
        cfg: _Config,
        needs: tuple[bool, ...],
    ) -> Tensor:
        with torch.autocast(cfg.device_type, enabled=False):
            v = cfg.structured.vocab_size if cfg.structured is not None else _matrix(weight).shape[0]
            idx, xk, tk, mask, n_kept = _select_tokens(x, targets, cfg, v)
            xk = xk.to(cfg.compute_dtype)
            # grads w.r.t. x, W_eff, b (the whole bias: the c ||W_v||^2 term's gradients derive from it)
            inner = (needs[0], needs[1] or needs[3], needs[2] or (coef is not None and (needs[1] or needs[4])))
            fused = any(inner) and not cfg.recompute
            m, norm = _row_norm_scale(weight, scale, cfg)
            if norm is not None:
                ctx.norm_dead, ctx.norm = norm[0], norm[1:]
            fold = not cfg.recompute and _folds_bias(xk, weight, bias is not None or coef is not None, cfg)
            w, wa = _effective_weight(weight, m, fold, cfg)
            if coef is not None:
                bias, ctx.sq = _sqnorm_bias(_matrix(weight), bias, coef)
            b = None if bias is None else bias.to(cfg.compute_dtype)
            aug = None
            if fold:
                assert wa is not None and b is not None  # folding is chosen for a matrix head with a bias
                xk, aug = _augment(xk, wa, b)
            total, dx, dw, db = _grad_pass(
                xk, tk, w, b, inner if fused else (False,) * 3, cfg, loss_too=True, aug=aug, mask=mask
            )
            loss = total / n_kept  # 0 / 0 = nan when every token is ignored, like the plain loss
        ctx.cfg, ctx.needs, ctx.inner, ctx.n_kept, ctx.idx = cfg, needs, inner, n_kept, idx
        ctx.mask = mask
        ctx.x_shape, ctx.x_dtype = x.shape, x.dtype
        ctx.b_dtype = None if bias is None else bias.dtype
        if fused:
            ctx.grads = (dx, dw, db)
            ctx.save_for_backward(weight, scale, coef)
        elif any(inner):
            ctx.save_for_backward(weight, scale, coef, xk, w, b, tk)
        return loss

    @staticmethod
    def backward(ctx: Any, grad_loss: Tensor) -> tuple[Tensor | None, ...]:
        cfg, needs = ctx.cfg, ctx.needs
        with torch.autocast(cfg.device_type, enabled=False):
            if cfg.recompute:
                weight, scale, coef, xk, w, b, tk = ctx.saved_tensors
                _, dx, dwe, db = _grad_pass(xk, tk, w, b, ctx.inner, cfg, loss_too=False, mask=ctx.mask)
            else:
                weight, scale, coef = ctx.saved_tensors
                dx, dwe, db = _fused_grads(ctx)
            g = grad_loss.to(cfg.acc_dtype) / ctx.n_kept  # inf (so nan gradients) when every token is ignored
            if dx is not None:
                dx = dx.mul_(g).to(ctx.x_dtype)
                if ctx.idx is not None:
                    dx = _scatter_rows(dx, ctx.idx, ctx.x_shape)
            # dwe is the gradient of the *sum* of token losses; g is folded into its in-place scaling
            norm = None if dwe is None or cfg.norm_power is None else (ctx.norm_dead, *ctx.norm)
            dw, ds = _weight_grads(dwe, weight, scale, g, needs, cfg, norm)
            db = None if db is None else db.mul_(g)
            dc = None
            if coef is not None and db is not None:
                dc = _sqnorm_grads(db, dw, weight, coef, ctx.sq, needs[4])
            dw = None if dw is None else dw.to(weight.dtype)
            db = None if db is None or not needs[2] else db.to(ctx.b_dtype)
        return dx, dw, db, ds, dc, None, None, None


def _fused_grads(ctx: Any) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """The fused schedule's (dx, dW_eff, db) of the sum of token losses, computed in forward.

    In float32 and lower precisions they are handed over once, to be scaled in place (no (V, d_t)
    copy), so a second backward through the same loss is refused. In float64, the dtype of gradient
    checks, copies are handed over and backward may run again (retain_graph=True, gradcheck)."""
    grads = getattr(ctx, "grads", None)  # foreign: torch's autograd ctx, whose grads go once handed over
    if grads is None:
        raise RuntimeError(
            "the chunked loss (impl='chunked') can be backpropagated only once in float32 and lower "
            "precisions; use impl='recompute' or 'plain' to backpropagate through it repeatedly"
        )
    if ctx.cfg.acc_dtype == torch.float64:
        dx, dw, db = (None if t is None else t.clone() for t in grads)
        return dx, dw, db
    del ctx.grads
    return grads
