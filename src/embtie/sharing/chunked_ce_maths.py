"""Per-chunk maths of the chunked cross-entropy: a chunk's log-probabilities (``_chunk_logprobs``),
its loss (``_chunk_loss``), its gradient w.r.t. the logits (``_chunk_grad``), the contraction of that
gradient into dx, dW and db (``_contract``), and the rank-1 label-smoothing correction applied once
after the last chunk (``_smoothing_correction``).

Formulas: see ``embtie.sharing.chunked_ce``. Everything is in ``cfg.acc_dtype`` (float32; float64 for
a float64 head) except the matmul operands and outputs, which are in the compute dtype (the autocast
dtype under autocast).
"""

from __future__ import annotations

import torch
from torch import Tensor

from embtie.sharing.chunked_ce_config import _Config, _matrix
from embtie.sharing.chunked_ce_workspace import _ones, _Workspace


def _chunk_logprobs(
    xc: Tensor, w: Tensor | None, b: Tensor | None, cfg: _Config, ws: _Workspace
) -> tuple[Tensor, Tensor | None]:
    """(c, d_t) -> log-probabilities (c, V) in cfg.acc_dtype, and the cap's inner value t (c, V) when
    soft-capped (tanh(u / cap), or the sigmoid's: ``CapShape.inner_``; else None)."""
    r = xc.shape[0]
    if cfg.structured is not None:
        u = cfg.structured(xc)
        if b is not None:
            u = u + b
    else:
        u = (ws.z if ws.u is None else ws.u)[:r]
        if b is not None:
            torch.addmm(b, xc, _matrix(w).t(), out=u)
        else:
            torch.mm(xc, _matrix(w).t(), out=u)
    z = ws.z[:r]
    if u.data_ptr() != z.data_ptr():  # bf16 (or structured) matmul output -> acc dtype, into the buffer
        z.copy_(u)
    lp = ws.lp[:r]
    if cfg.cap is None:
        return torch.log_softmax(z, dim=1, out=lp), None
    assert ws.zc is not None  # allocated by _Workspace.ensure for a capped head
    t = cfg.cap_shape.inner_(z, cfg.cap)
    return torch.log_softmax(torch.mul(t, cfg.cap, out=ws.zc[:r]), dim=1, out=lp), t


def _chunk_logz(lp: Tensor, tc: Tensor, cfg: _Config, ws: _Workspace) -> Tensor:
    """(c,) log Z of each token's (soft-capped) logits, read off at the target: z[t] - lp[t] (no
    pass over the chunk: the logits are still in the workspace after ``_chunk_logprobs``)."""
    r = lp.shape[0]
    zc = ws.zc
    z = ws.z[:r] if cfg.cap is None or zc is None else zc[:r]
    col = tc.unsqueeze(1)
    return (z.gather(1, col) - lp.gather(1, col)).squeeze(1)


def _kept_sum(v: Tensor, mc: Tensor | None) -> Tensor:
    """Sum of the per-token values v (c,), over the tokens the 0/1 mask ``mc`` keeps (all if None)."""
    return v.sum() if mc is None else v @ mc


def _chunk_loss(lp: Tensor, tc: Tensor, cfg: _Config, mc: Tensor | None = None, log_z: Tensor | None = None) -> Tensor:
    """Sum over the chunk's tokens of -(1 - eps) lp[t] - (eps / V) sum_j lp[j] (+ lambda log_z^2 with
    the z-loss) (0-d, lp's dtype); ``mc`` (c,) float 0/1: only the tokens it keeps (the masked,
    sync-free path)."""
    part = _kept_sum(lp.gather(1, tc.unsqueeze(1)).squeeze(1), mc) * -(1.0 - cfg.eps)
    if cfg.eps:
        part = part - _kept_sum(lp.sum(dim=1), mc) * (cfg.eps / lp.shape[1])
    if log_z is not None:
        part = part + _kept_sum(log_z.square(), mc) * cfg.z_loss
    return part


def _chunk_grad(
    lp: Tensor,
    t: Tensor | None,
    tc: Tensor,
    cfg: _Config,
    ws: _Workspace,
    mc: Tensor | None = None,
    log_z: Tensor | None = None,
) -> Tensor:
    """Log-probabilities (c, V) (overwritten) -> d(sum of token losses)/du (c, V) in the compute dtype.

    Without a soft-cap the uniform -eps/V term is left out here (``_smoothing_correction`` adds it
    as a rank-1 term to the contracted gradients); with one it is applied before the cap's derivative.
    Everything is in the acc dtype until the result is rounded to the compute dtype (into the bf16 buffer).
    With the z-loss (``log_z`` (c,)), d(lambda log^2 Z)/dz = 2 lambda log Z softmax(z) scales the softmax.
    """
    tc = tc.unsqueeze(1)
    dz = lp.exp_()
    if log_z is not None:
        dz.mul_(log_z.mul(2.0 * cfg.z_loss).add_(1.0).unsqueeze(1))
    dz.scatter_add_(1, tc, dz.new_full((dz.shape[0], 1), -(1.0 - cfg.eps)))
    if t is not None:
        assert cfg.cap is not None  # t exists for a capped head only
        if cfg.eps:
            dz.sub_(cfg.eps / dz.shape[1])
        dz.mul_(cfg.cap_shape.slope_(t, cfg.cap))
    if mc is not None:  # ignored tokens: no gradient
        dz.mul_(mc.unsqueeze(1))
    if ws.u is not None:
        return ws.u[: dz.shape[0]].copy_(dz)
    return dz


def _contract(
    dzc: Tensor,
    xc: Tensor,
    w: Tensor | None,
    dx: Tensor | None,
    dw: Tensor | None,
    db: Tensor | None,
    cfg: _Config,
    ws: _Workspace,
    first: bool,
) -> None:
    """dx[chunk] = dz @ W (written into ``dx``, the chunk's rows); dW += dz^T xc (= on the ``first``
    chunk: dW is allocated uninitialised); db += sum dz."""
    if db is not None:
        if dzc.dtype == db.dtype:  # a gemv reads dz once at full speed; a dim-0 sum is ~2x slower on CPU
            db.addmv_(dzc.t(), _ones(dzc.shape[0], dzc))
        else:
            db.add_(dzc.sum(dim=0, dtype=db.dtype))
    if dw is not None:
        if ws.dw is None:
            if first:
                torch.mm(dzc.t(), xc, out=dw)
            else:
                dw.addmm_(dzc.t(), xc)
        elif first:
            dw.copy_(torch.mm(dzc.t(), xc, out=ws.dw))
        else:
            dw.add_(torch.mm(dzc.t(), xc, out=ws.dw))
    if dx is not None:
        if cfg.structured is not None:
            dx.copy_(cfg.structured.transpose(dzc))
        elif dx.dtype == dzc.dtype:
            torch.mm(dzc, _matrix(w), out=dx)
        else:
            dx.copy_(dzc @ _matrix(w))


def _smoothing_correction(
    xk: Tensor,
    w: Tensor | None,
    dx: Tensor | None,
    dw: Tensor | None,
    db: Tensor | None,
    n: int | Tensor,
    cfg: _Config,
    mask: Tensor | None = None,
) -> None:
    """Add the gradient of the uniform -eps/V term of every token's dloss/dz (no soft-cap) in place.
    ``mask`` (N,) float 0/1 and n the kept count (a tensor) on the masked path."""
    if not cfg.eps or cfg.cap is not None or (mask is None and n == 0):
        return
    v = cfg.structured.vocab_size if cfg.structured is not None else _matrix(w).shape[0]
    c = cfg.eps / v
    acc = cfg.acc_dtype
    if dx is not None:
        if cfg.structured is not None:
            col = cfg.structured.transpose(xk.new_ones(1, v, dtype=acc)).squeeze(0)
        else:
            col = _matrix(w).to(acc).sum(dim=0)
        dx.sub_((c * col).to(dx.dtype))
        if mask is not None:
            dx.mul_(mask.unsqueeze(1))
    if dw is not None:
        dw.sub_(c * (xk.to(acc).sum(dim=0) if mask is None else mask @ xk.to(acc)))
    if db is not None:
        db.sub_(c * n)
