"""The effective weight of the chunked cross-entropy and the chain rule back through it.

Forward: the row-norm factor ||W_v||^p (``_row_norm_scale``, ``Head.norm_power``), m W written into
a reused buffer (``_scaled``, ``_effective_weight``) and the squared-norm bias c ||W_v||^2
(``_sqnorm_bias``). Backward: from the gradient dL/dW_eff of the chunk pass to dL/dW and dL/dm
(``_weight_grads``) and to dL/dc (``_sqnorm_grads``), in place where possible, so that no fresh
(V, d_t) tensors are allocated (and page-faulted) at every step as autograd's would be.
"""

from __future__ import annotations

import torch
from torch import Tensor

from embtie.sharing.chunked_ce_config import _Config, _matrix
from embtie.sharing.chunked_ce_workspace import _matrix_buffer
from embtie.sharing.head import accumulation_dtype

NORM_EPS = 1e-12


def _scaled(weight: Tensor, scale: Tensor | None, out: Tensor | None) -> Tensor:
    """(V, d_t) weight times the per-row (V,) or scalar (0-d) scale (into ``out`` when given)."""
    if scale is None:
        return weight
    m = (scale.unsqueeze(1) if scale.dim() == 1 else scale).to(weight.dtype)
    return torch.mul(weight, m, out=out) if out is not None else weight * m


def _row_norm_scale(
    weight: Tensor | None, scale: Tensor | None, cfg: _Config
) -> tuple[Tensor | None, tuple[Tensor, Tensor, Tensor, Tensor] | None]:
    """(m, norm): the per-row scale m_v = scale_v ||W_v||^p with ``cfg.norm_power`` p (else ``scale``
    itself), and norm = (dead, n, npart, m) for backward (None without a norm power): ``dead`` the
    rows whose norm was clamped (no gradient through it), n the clamped norms, npart = n^p."""
    if weight is None or cfg.norm_power is None:
        return scale, None
    n32 = torch.linalg.vector_norm(weight, dim=-1, dtype=accumulation_dtype(weight.dtype))
    dead = n32 < NORM_EPS  # clamped rows: no gradient through their norm
    n = n32.clamp_min(NORM_EPS).to(weight.dtype)
    npart = n.reciprocal() if cfg.norm_power == -1 else n.pow(cfg.norm_power)
    m = npart if scale is None else npart * scale
    return m, (dead, n, npart, m)


def _effective_weight(
    weight: Tensor | None, m: Tensor | None, fold: bool, cfg: _Config
) -> tuple[Tensor | None, Tensor | None]:
    """(w, wa): W_eff = m W in the compute dtype (None for a structured head); with bias folding
    (``fold``) written into the first d_t columns of the reused [W_eff, b] buffer ``wa`` (else None)."""
    if fold:
        weight = _matrix(weight)  # a structured head folds no bias
        d = weight.shape[1]
        wa = _matrix_buffer("w_aug", weight, weight.dtype, (weight.shape[0], d + 1))
        w = _scaled(weight, m, wa[:, :d]) if m is not None else wa[:, :d].copy_(weight)
        return w, wa
    if weight is not None:
        out = _matrix_buffer("w_eff", weight, weight.dtype) if m is not None and not cfg.recompute else None
        return _scaled(weight, m, out).to(cfg.compute_dtype), None
    return None, None


def _sqnorm_bias(weight: Tensor, bias: Tensor | None, coef: Tensor) -> tuple[Tensor, Tensor]:
    """(bias + c ||W_v||^2, ||W_v||^2): the whole bias with the squared-norm term, and the norms."""
    sq = torch.linalg.vector_norm(weight, dim=-1, dtype=accumulation_dtype(weight.dtype)).square_().to(weight.dtype)
    return (sq * coef if bias is None else torch.addcmul(bias, sq, coef)), sq


def _norm_weight_grads(
    dwe: Tensor,
    weight: Tensor,
    scale: Tensor | None,
    g: Tensor,
    needs: tuple[bool, ...],
    cfg: _Config,
    norm: tuple[Tensor, Tensor, Tensor, Tensor],
) -> tuple[Tensor | None, Tensor | None]:
    """``_weight_grads`` with a row-norm power p: m_v = scale_v ||W_v||^p, so
    dL/dW_v = m_v dL/dW_eff[v] + p m_v <dL/dW_eff[v], W_v> / ||W_v||^2 W_v."""
    dw = ds = None
    dead, n, npart, m = norm
    p = cfg.norm_power
    assert p is not None
    acc = dwe.dtype  # cfg.acc_dtype: float32 (float64 for float64)
    w32 = weight.to(acc)
    # g_v = <dL/dW_eff[v], W_v> = dL/dm_v (before dwe is scaled in place)
    gm = torch.mul(dwe, w32, out=_matrix_buffer("tmp", dwe, dwe.dtype)).sum(dim=1).mul_(g)
    if needs[3]:
        assert scale is not None  # it needs a gradient
        ds = gm * npart.to(acc)
        ds = (ds if scale.dim() == 1 else ds.sum()).to(scale.dtype)
    if needs[1]:
        n32, m32 = n.to(acc), m.to(acc)
        k = (gm * m32 * p / (n32 * n32)).masked_fill_(dead, 0.0)
        dw = dwe.mul_((m32 * g).unsqueeze(1)).addcmul_(w32, k.unsqueeze(1))
    return dw, ds


def _scale_weight_grads(
    dwe: Tensor, weight: Tensor, scale: Tensor | None, g: Tensor, needs: tuple[bool, ...]
) -> tuple[Tensor | None, Tensor | None]:
    """``_weight_grads`` without a norm power: dL/dm_v = <dL/dW_eff[v], W_v> (summed for a 0-d
    scale), dL/dW = m dL/dW_eff."""
    dw = ds = None
    if needs[3]:  # before dwe is scaled in place
        assert scale is not None  # it needs a gradient
        w32 = weight.to(dwe.dtype)
        if scale.dim() == 1:
            ds = torch.mul(dwe, w32, out=_matrix_buffer("tmp", dwe, dwe.dtype)).sum(dim=1)
        else:
            ds = torch.dot(dwe.reshape(-1), w32.reshape(-1))
        ds = (ds * g).to(scale.dtype)
    if needs[1]:
        dw = dwe.mul_(g if scale is None else (scale.unsqueeze(1) if scale.dim() == 1 else scale) * g)
    return dw, ds


def _weight_grads(
    dwe: Tensor | None,
    weight: Tensor,
    scale: Tensor | None,
    g: Tensor,
    needs: tuple[bool, ...],
    cfg: _Config,
    norm: tuple[Tensor, Tensor, Tensor, Tensor] | None,
) -> tuple[Tensor | None, Tensor | None]:
    """(dL/dW in dwe's dtype (None unless needs[1]), dL/dscale (None unless needs[3])) from ``dwe``, the
    gradient w.r.t. W_eff of the *sum* of token losses (None: neither is needed). The factor ``g``
    (incoming gradient / kept count) is folded into the one in-place pass that scales ``dwe`` anyway
    (a V x d pass fewer); ``norm``: ``_row_norm_scale``'s, when the head has a norm power."""
    if dwe is None:
        return None, None
    if cfg.norm_power is not None:
        assert norm is not None  # _row_norm_scale gives it whenever there is a norm power
        return _norm_weight_grads(dwe, weight, scale, g, needs, cfg, norm)
    return _scale_weight_grads(dwe, weight, scale, g, needs)


def _sqnorm_grads(
    db: Tensor, dw: Tensor | None, weight: Tensor, coef: Tensor, sq: Tensor, need_coef: bool
) -> Tensor | None:
    """bias_v = learned_v + c ||W_v||^2: returns dL/dc = <dL/db, ||W||^2> (when ``need_coef``) and
    adds dL/dW_v += 2 c dL/db_v W_v into ``dw`` in place (when given)."""
    dc = None
    if need_coef:
        dc = torch.dot(db, sq.to(db.dtype)).to(coef.dtype)
    if dw is not None:
        dw.addcmul_(weight.to(db.dtype), (db * (2.0 * coef.to(db.dtype))).unsqueeze(1))
    return dc
