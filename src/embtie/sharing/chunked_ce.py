"""Memory-lean cross-entropy of a canonical head: never holds the N x V logits or their gradient.

For z = cap(x @ W^T + b) (W the effective weight, all scales folded in; ``cap`` the optional
soft-cap c * tanh(u / c)) and the mean over kept tokens (target != ignore_index) of PyTorch's
label-smoothed cross-entropy

    loss_n = -(1 - eps) lp_n[t_n] - (eps / V) sum_j lp_n[j],    lp_n = log_softmax(z_n),

the gradient w.r.t. the logits of one token is

    dz_n = (softmax(z_n) - (1 - eps) onehot(t_n) - eps / V) / N_kept,    du_n = dz_n * (1 - (z_n / c)^2).

The 1/N_kept factor is applied to the contracted (N, d_t) / (V, d_t) gradients, not to the logits,
and without a soft-cap so is the uniform -eps/V term (a rank-1 correction), to save passes over
the chunk's logits.

Tokens are processed ``chunk`` at a time: the chunk's logits are computed, reduced to the loss and
turned into their gradient at once, which is immediately contracted into dx (chunk, d_t), dW (V, d_t)
and db (V,) — so the peak extra memory is a few chunk x V buffers instead of several N x V ones.

Two schedules:
- ``fused`` (default): the gradients are computed in the forward pass when anything needs them and
  scaled by the incoming scalar gradient in backward. Three matmuls per chunk, like plain autograd.
- ``recompute``: the forward pass computes only the loss (and the per-token logsumexp); backward
  recomputes each chunk's logits. Four matmuls per chunk; nothing but the loss is done when no
  backward follows.

The effective weight (normalization, per-row scale, logit scale) is built once per step by the
caller with ordinary autograd, so gradients reach every learned tensor (E, r, s) through it.
Under autocast the matmuls run in the autocast dtype (as F.linear would) and everything else in
float32; gradients are accumulated in float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from embtie.errors import DataError
from embtie.sharing.head import Head, StructuredWeight

CHUNK_ELEMENTS = 1 << 24
"""Default chunk budget in logits: chunk = max(16, CHUNK_ELEMENTS // V) tokens (64 MiB of float32 logits)."""


@dataclass(frozen=True)
class _Config:
    ignore_index: int
    eps: float
    cap: float | None
    chunk: int
    recompute: bool
    compute_dtype: torch.dtype
    device_type: str
    structured: StructuredWeight | None


def default_chunk(vocab_size: int) -> int:
    """Tokens per chunk for a vocabulary of ``vocab_size``."""
    return max(16, CHUNK_ELEMENTS // vocab_size)


def _chunk_logits(xc: Tensor, w: Tensor | None, b: Tensor | None, cfg: _Config) -> tuple[Tensor, Tensor | None]:
    """(c, d_t) -> float32 logits (c, V), and tanh(u / cap) (c, V) when soft-capped (else None)."""
    if cfg.structured is not None:
        u = cfg.structured(xc)
        if b is not None:
            u = u + b
    elif b is not None:
        u = torch.addmm(b, xc, w.t())
    else:
        u = xc @ w.t()
    u = u.float() if u.dtype != torch.float32 else u
    if cfg.cap is None:
        return u, None
    t = u.div_(cfg.cap).tanh_()
    return t * cfg.cap, t


def _chunk_logprobs(xc: Tensor, w: Tensor | None, b: Tensor | None, cfg: _Config) -> tuple[Tensor, Tensor | None]:
    """(c, d_t) -> float32 log-probabilities (c, V), and tanh(u / cap) (c, V) or None."""
    z, t = _chunk_logits(xc, w, b, cfg)
    return torch.log_softmax(z, dim=1), t


def _chunk_loss(lp: Tensor, tc: Tensor, cfg: _Config) -> Tensor:
    """Sum over the chunk's tokens of -(1 - eps) lp[t] - (eps / V) sum_j lp[j] (a 0-d float32 tensor)."""
    part = lp.gather(1, tc.unsqueeze(1)).sum() * -(1.0 - cfg.eps)
    if cfg.eps:
        part = part - lp.sum() * (cfg.eps / lp.shape[1])
    return part


def _chunk_grad(lp: Tensor, t: Tensor | None, tc: Tensor, cfg: _Config) -> Tensor:
    """In place: log-probabilities (c, V) -> d(sum of token losses)/du (c, V).

    Without a soft-cap the uniform -eps/V term is left out here (``_smoothing_correction`` adds it
    as a rank-1 term to the contracted gradients); with one it is applied before the cap's derivative.
    """
    dz = lp.exp_()
    dz.scatter_add_(1, tc.unsqueeze(1), dz.new_full((dz.shape[0], 1), -(1.0 - cfg.eps)))
    if t is not None:
        if cfg.eps:
            dz.sub_(cfg.eps / dz.shape[1])
        dz.mul_(t.square_().neg_().add_(1.0))
    return dz


def _contract(
    dz: Tensor, xc: Tensor, w: Tensor | None, dx: Tensor | None, dw: Tensor | None, db: Tensor | None, cfg: _Config
) -> Tensor | None:
    """Accumulate dW += dz^T xc and db += sum dz; return dz @ W for the chunk (or None)."""
    if db is not None:
        db.add_(dz.sum(dim=0))
    dzc = dz if dz.dtype == cfg.compute_dtype else dz.to(cfg.compute_dtype)
    if dw is not None:
        if dw.dtype == dzc.dtype:
            dw.addmm_(dzc.t(), xc)
        else:
            dw.add_(dzc.t() @ xc)
    if dx is None:
        return None
    return cfg.structured.transpose(dzc) if cfg.structured is not None else dzc @ w


def _smoothing_correction(
    xk: Tensor, w: Tensor | None, dx: Tensor | None, dw: Tensor | None, db: Tensor | None, n: int, cfg: _Config
) -> None:
    """Add the gradient of the uniform -eps/V term of every token's dloss/dz (no soft-cap) in place."""
    if not cfg.eps or cfg.cap is not None or n == 0:
        return
    v = cfg.structured.vocab_size if cfg.structured is not None else w.shape[0]
    c = cfg.eps / v
    if dx is not None:
        if cfg.structured is not None:
            col = cfg.structured.transpose(xk.new_ones(1, v, dtype=torch.float32)).squeeze(0)
        else:
            col = w.float().sum(dim=0)
        dx.sub_((c * col).to(dx.dtype))
    if dw is not None:
        dw.sub_(c * xk.float().sum(dim=0))
    if db is not None:
        db.sub_(c * n)


def _check_targets(tk: Tensor, v: int, ignore_index: int) -> None:
    if tk.numel() and (int(tk.min()) < 0 or int(tk.max()) >= v):
        bad = int(tk.min()) if int(tk.min()) < 0 else int(tk.max())
        raise DataError(
            f"target id {bad} is outside the vocabulary [0, {v}); "
            f"fix the data or mark padding with ignore_index={ignore_index}"
        )


def _grad_pass(
    xk: Tensor,
    tk: Tensor,
    w: Tensor | None,
    b: Tensor | None,
    needs: tuple[bool, bool, bool],
    cfg: _Config,
    loss_too: bool,
) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor | None]:
    """One pass over the chunks: (sum of token losses or 0, d/dx (n, d_t), d/dW (V, d_t), d/db (V,)).

    Gradients are of the *sum* of token losses, in float32 (the caller scales them)."""
    dev = xk.device
    n = xk.shape[0]
    dx = torch.empty(xk.shape, dtype=torch.float32, device=dev) if needs[0] else None
    dw = torch.zeros(w.shape, dtype=torch.float32, device=dev) if needs[1] else None
    db = torch.zeros(b.shape, dtype=torch.float32, device=dev) if needs[2] else None
    want = any(needs)
    total = torch.zeros((), dtype=torch.float32, device=dev)
    for start in range(0, n, cfg.chunk):
        xc, tc = xk[start : start + cfg.chunk], tk[start : start + cfg.chunk]
        lp, t = _chunk_logprobs(xc, w, b, cfg)
        if loss_too:
            total += _chunk_loss(lp, tc, cfg)
        if want:
            dz = _chunk_grad(lp, t, tc, cfg)
            dxc = _contract(dz, xc, w, dx, dw, db, cfg)
            if dx is not None:
                dx[start : start + cfg.chunk] = dxc
        del lp, t
    if want:
        _smoothing_correction(xk, w, dx, dw, db, n, cfg)
    return total, dx, dw, db


class ChunkedCrossEntropy(torch.autograd.Function):
    """Mean (label-smoothed) cross-entropy of cap(x @ W^T + b) over kept tokens, chunk by chunk.

    forward(x (N, d_t), weight (V, d_t) or None when cfg.structured, bias (V,) or None,
    targets (N,) long, cfg, needs: which of (x, weight, bias) need a gradient) -> 0-d float32 loss.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, targets, cfg: _Config, needs: tuple[bool, bool, bool]):  # type: ignore[override]
        with torch.autocast(cfg.device_type, enabled=False):
            keep = targets != cfg.ignore_index
            n_kept = int(keep.sum())
            if n_kept < targets.numel():
                idx = keep.nonzero().squeeze(1)
                xk, tk = x.index_select(0, idx), targets.index_select(0, idx)
            else:
                idx, xk, tk = None, x, targets
            v = cfg.structured.vocab_size if cfg.structured is not None else weight.shape[0]
            _check_targets(tk, v, cfg.ignore_index)
            xk = xk.to(cfg.compute_dtype)
            w = None if weight is None else weight.to(cfg.compute_dtype)
            b = None if bias is None else bias.to(cfg.compute_dtype)
            fused = any(needs) and not cfg.recompute
            total, dx, dw, db = _grad_pass(xk, tk, w, b, needs if fused else (False,) * 3, cfg, loss_too=True)
            loss = total / n_kept if n_kept else total * float("nan")
        ctx.cfg, ctx.needs, ctx.n_kept, ctx.idx = cfg, needs, n_kept, idx
        ctx.x_shape, ctx.x_dtype = x.shape, x.dtype
        ctx.w_dtype = None if weight is None else weight.dtype
        ctx.b_dtype = None if bias is None else bias.dtype
        if fused:
            ctx.grads = (dx, dw, db)
        elif any(needs):
            ctx.save_for_backward(xk, w, b, tk)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):  # type: ignore[override]
        cfg = ctx.cfg
        with torch.autocast(cfg.device_type, enabled=False):
            if cfg.recompute:
                xk, w, b, tk = ctx.saved_tensors
                _, dx, dw, db = _grad_pass(xk, tk, w, b, ctx.needs, cfg, loss_too=False)
            else:
                dx, dw, db = ctx.grads
                del ctx.grads
            g = grad_loss.float() / ctx.n_kept if ctx.n_kept else grad_loss.float() * float("nan")
            if dx is not None:
                dx = dx.mul_(g).to(ctx.x_dtype)
                if ctx.idx is not None:
                    full = dx.new_zeros(ctx.x_shape)
                    full.index_copy_(0, ctx.idx, dx)
                    dx = full
            dw = None if dw is None else dw.mul_(g).to(ctx.w_dtype)
            db = None if db is None else db.mul_(g).to(ctx.b_dtype)
        return dx, dw, db, None, None, None


def chunked_cross_entropy(
    head: Head,
    x: Tensor,
    targets: Tensor,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    chunk_size: int | None = None,
    recompute: bool = False,
) -> Tensor:
    """Mean cross-entropy of ``head`` on x (N, d_t) against targets (N,), chunk by chunk.

    Equal (to float rounding) to F.cross_entropy(head.logits(x).float(), targets, ...) and its
    gradients w.r.t. x and every tensor the head was built from. ``chunk_size`` tokens per chunk
    (default: ``default_chunk(V)``); ``recompute`` selects the recompute-in-backward schedule.
    """
    device_type = x.device.type
    autocast = torch.is_autocast_enabled(device_type)
    compute_dtype = torch.get_autocast_dtype(device_type) if autocast else x.dtype
    structured = head.structured if head.row_scale is None else None
    if structured is not None:
        if head.scale is not None:
            x = x * head.scale
        weight = None
        vocab = structured.vocab_size
    else:
        weight = head.effective_weight()
        vocab = weight.shape[0]
    bias = head.bias
    chunk = default_chunk(vocab) if chunk_size is None else int(chunk_size)
    if chunk < 1:
        raise ValueError(f"chunk_size={chunk_size} must be >= 1")
    cfg = _Config(
        ignore_index=ignore_index,
        eps=float(label_smoothing),
        cap=head.softcap,
        chunk=chunk,
        recompute=recompute,
        compute_dtype=compute_dtype,
        device_type=device_type,
        structured=structured,
    )
    grad = torch.is_grad_enabled()
    needs = (
        grad and x.requires_grad,
        grad and weight is not None and weight.requires_grad,
        grad and bias is not None and bias.requires_grad,
    )
    return ChunkedCrossEntropy.apply(x, weight, bias, targets, cfg, needs)
