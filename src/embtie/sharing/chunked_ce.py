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

NORM_EPS = 1e-12

CHUNK_ELEMENTS = 1 << 24
"""Default chunk budget in logits on the CPU: chunk = max(16, CHUNK_ELEMENTS // V) tokens (64 MiB of
float32 logits; measured in bench/: smaller chunks stay in cache, larger ones gain nothing)."""

CUDA_CHUNK_ELEMENTS = 1 << 25
CUDA_MIN_CHUNK = 1024
"""On CUDA a chunk costs a fixed number of kernel launches, so chunks are larger: max(CUDA_MIN_CHUNK,
CUDA_CHUNK_ELEMENTS // V) tokens. Measured on an H100 (`python -m bench.chunk_sweep --device cuda`,
8192 tokens, d=512): 256-token chunks cost 1.15x plain (fp32) and 1.50x (bf16), 1024-token chunks
1.01x / 1.05x, at V = 32768; 1024 tokens at V = 131072: 1.02x."""


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
    norm_power: float | None = None


def default_chunk(vocab_size: int, device_type: str = "cpu") -> int:
    """Tokens per chunk for a vocabulary of ``vocab_size`` on a device of type ``device_type``."""
    if device_type == "cuda":
        return max(CUDA_MIN_CHUNK, CUDA_CHUNK_ELEMENTS // vocab_size)
    return max(16, CHUNK_ELEMENTS // vocab_size)


class _Workspace:
    """Chunk-sized buffers reused by every chunk (out= ops), and by the next call of the same shape.

    Fresh multi-MiB tensors would be page-faulted in anew for every chunk on CPU (large allocations
    are mmap-ed and returned to the system when freed); reusing them is what makes the chunked loss
    as fast as the plain one. The most recent workspace is kept (a few chunk x V buffers, e.g.
    3 x 64 MiB at V = 32768); ``release_workspace()`` frees it.
    """

    def __init__(self, rows: int, v: int, d: int, cfg: _Config, device: torch.device) -> None:
        f32, cd = torch.float32, cfg.compute_dtype
        self.rows, self.v, self.d, self.device = rows, v, d, device
        self.z = torch.empty(rows, v, dtype=f32, device=device)  # logits, or tanh(u / cap)
        self.lp = torch.empty(rows, v, dtype=f32, device=device)  # log-probabilities -> dz
        self.u = None if cd == f32 else torch.empty(rows, v, dtype=cd, device=device)  # matmul out / dz
        self.zc: Tensor | None = None  # soft-cap input (allocated when a capped head comes)
        self.dw: Tensor | None = None  # (V, d_t) product buffer for dW in a low-precision compute dtype

    def ensure(self, cfg: _Config, dw: bool) -> _Workspace:
        """Add the buffers this call needs that earlier calls did not (kept for later calls)."""
        if cfg.cap is not None and self.zc is None:
            self.zc = torch.empty(self.rows, self.v, dtype=torch.float32, device=self.device)
        if dw and cfg.compute_dtype != torch.float32 and self.dw is None:
            self.dw = torch.empty(self.v, self.d, dtype=cfg.compute_dtype, device=self.device)
        return self


_CACHE: dict[tuple, _Workspace] = {}


def _workspace(rows: int, v: int, d: int, cfg: _Config, device: torch.device, dw: bool) -> _Workspace:
    """A workspace of at least ``rows`` rows (the cached one when it is large enough).

    Keyed by shape, dtype and device only: heads that differ in soft-cap or in whether dW is needed
    (a fixed classifier and a tied one in the same process) share it, instead of each freeing and
    re-allocating (and page-faulting) the other's buffers."""
    key = (v, d, cfg.compute_dtype, device)
    ws = _CACHE.get(key)
    if ws is None or ws.rows < rows:
        _CACHE.clear()
        ws = _CACHE[key] = _Workspace(rows, v, d, cfg, device)
    return ws.ensure(cfg, dw)


def release_workspace() -> None:
    """Free the cached chunk buffers and (V, d_t) scratch matrices (re-created by the next call)."""
    _CACHE.clear()
    _MATRIX_CACHE.clear()


def _chunk_logprobs(
    xc: Tensor, w: Tensor | None, b: Tensor | None, cfg: _Config, ws: _Workspace
) -> tuple[Tensor, Tensor | None]:
    """(c, d_t) -> float32 log-probabilities (c, V), and tanh(u / cap) (c, V) when soft-capped (else None)."""
    r = xc.shape[0]
    if cfg.structured is not None:
        u = cfg.structured(xc)
        if b is not None:
            u = u + b
    else:
        u = (ws.z if ws.u is None else ws.u)[:r]
        if b is not None:
            torch.addmm(b, xc, w.t(), out=u)
        else:
            torch.mm(xc, w.t(), out=u)
    z = ws.z[:r]
    if u.data_ptr() != z.data_ptr():  # bf16 (or structured) matmul output -> float32, into the buffer
        z.copy_(u)
    lp = ws.lp[:r]
    if cfg.cap is None:
        return torch.log_softmax(z, dim=1, out=lp), None
    t = z.div_(cfg.cap).tanh_()
    return torch.log_softmax(torch.mul(t, cfg.cap, out=ws.zc[:r]), dim=1, out=lp), t


def _kept_sum(v: Tensor, mc: Tensor | None) -> Tensor:
    """Sum of the per-token values v (c,), over the tokens the 0/1 mask ``mc`` keeps (all if None)."""
    return v.sum() if mc is None else v @ mc


def _chunk_loss(lp: Tensor, tc: Tensor, cfg: _Config, mc: Tensor | None = None) -> Tensor:
    """Sum over the chunk's tokens of -(1 - eps) lp[t] - (eps / V) sum_j lp[j] (a 0-d float32 tensor);
    ``mc`` (c,) float 0/1: only the tokens it keeps (the masked, sync-free path)."""
    part = _kept_sum(lp.gather(1, tc.unsqueeze(1)).squeeze(1), mc) * -(1.0 - cfg.eps)
    if cfg.eps:
        part = part - _kept_sum(lp.sum(dim=1), mc) * (cfg.eps / lp.shape[1])
    return part


def _chunk_grad(
    lp: Tensor, t: Tensor | None, tc: Tensor, cfg: _Config, ws: _Workspace, mc: Tensor | None = None
) -> Tensor:
    """Log-probabilities (c, V) (overwritten) -> d(sum of token losses)/du (c, V) in the compute dtype.

    Without a soft-cap the uniform -eps/V term is left out here (``_smoothing_correction`` adds it
    as a rank-1 term to the contracted gradients); with one it is applied before the cap's derivative.
    Everything is float32 until the result is rounded to the compute dtype (into the bf16 buffer).
    """
    tc = tc.unsqueeze(1)
    dz = lp.exp_()
    dz.scatter_add_(1, tc, dz.new_full((dz.shape[0], 1), -(1.0 - cfg.eps)))
    if t is not None:
        if cfg.eps:
            dz.sub_(cfg.eps / dz.shape[1])
        dz.mul_(t.square_().neg_().add_(1.0))
    if mc is not None:  # ignored tokens: no gradient
        dz.mul_(mc.unsqueeze(1))
    if ws.u is not None:
        return ws.u[: dz.shape[0]].copy_(dz)
    return dz


_ONES: dict[tuple, Tensor] = {}


def _ones(n: int, like: Tensor) -> Tensor:
    """A cached float32 vector of n ones on like's device."""
    key = (like.device,)
    v = _ONES.get(key)
    if v is None or v.shape[0] < n:
        v = _ONES[key] = torch.ones(n, dtype=torch.float32, device=like.device)
    return v[:n]


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
        if dzc.dtype == torch.float32:  # a gemv reads dz once at full speed; a dim-0 sum is ~2x slower on CPU
            db.addmv_(dzc.t(), _ones(dzc.shape[0], dzc))
        else:
            db.add_(dzc.sum(dim=0, dtype=torch.float32))
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
            torch.mm(dzc, w, out=dx)
        else:
            dx.copy_(dzc @ w)


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
    v = cfg.structured.vocab_size if cfg.structured is not None else w.shape[0]
    c = cfg.eps / v
    if dx is not None:
        if cfg.structured is not None:
            col = cfg.structured.transpose(xk.new_ones(1, v, dtype=torch.float32)).squeeze(0)
        else:
            col = w.float().sum(dim=0)
        dx.sub_((c * col).to(dx.dtype))
        if mask is not None:
            dx.mul_(mask.unsqueeze(1))
    if dw is not None:
        dw.sub_(c * (xk.float().sum(dim=0) if mask is None else mask @ xk.float()))
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
    aug: tuple[Tensor, Tensor] | None = None,
    mask: tuple[Tensor, Tensor] | None = None,
) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor | None]:
    """One pass over the chunks: (sum of token losses or 0, d/dx (n, d_t), d/dW (V, d_t), d/db (V,)).

    ``mask``: (keep (n,) float 0/1, kept count 0-d): the sync-free path, where ignored tokens stay in
    place (their targets replaced by 0) and are zeroed out instead of being removed beforehand.

    Gradients are of the *sum* of token losses, in float32 (the caller scales them). ``aug``:
    ([x, 1] (n, d_t + 1), [W, b] (V, d_t + 1)) whose product gives the logits with the bias in
    (``_folds_bias``); xk, w and b are then views / the column of these."""
    dev = xk.device
    n = xk.shape[0]
    dx = torch.empty(xk.shape, dtype=torch.float32, device=dev) if needs[0] else None
    dw = torch.empty(w.shape, dtype=torch.float32, device=dev) if needs[1] and n else None
    db = torch.zeros(b.shape, dtype=torch.float32, device=dev) if needs[2] else None
    want = any(needs)
    total = torch.zeros((), dtype=torch.float32, device=dev)
    v = cfg.structured.vocab_size if cfg.structured is not None else w.shape[0]
    ws = _workspace(min(cfg.chunk, n), v, xk.shape[1], cfg, dev, dw is not None)
    for start in range(0, n, cfg.chunk):
        sl = slice(start, start + cfg.chunk)
        xc, tc = xk[sl], tk[sl]
        if aug is None:
            lp, t = _chunk_logprobs(xc, w, b, cfg, ws)
        else:
            lp, t = _chunk_logprobs(aug[0][sl], aug[1], None, cfg, ws)
        mc = None if mask is None else mask[0][sl]
        if loss_too:
            total += _chunk_loss(lp, tc, cfg, mc)
        if want:
            dzc = _chunk_grad(lp, t, tc, cfg, ws, mc)
            _contract(dzc, xc, w, None if dx is None else dx[sl], dw, db, cfg, ws, start == 0)
    if want:
        keep, count = (None, n) if mask is None else mask
        _smoothing_correction(xk, w, dx, dw, db, count, cfg, keep)
    return total, dx, dw, db


_MATRIX_CACHE: dict[tuple, Tensor] = {}


def _matrix_buffer(role: str, like: Tensor, dtype: torch.dtype, shape: tuple[int, ...] | None = None) -> Tensor:
    """A cached (V, d_t) scratch matrix (one per role; ``shape`` when not like's): reused by every step,
    so not page-faulted anew."""
    shape = tuple(like.shape) if shape is None else shape
    key = (role, shape, dtype, like.device)
    buf = _MATRIX_CACHE.get(key)
    if buf is None:
        for k in [k for k in _MATRIX_CACHE if k[0] == role]:
            del _MATRIX_CACHE[k]
        buf = _MATRIX_CACHE[key] = torch.empty(shape, dtype=dtype, device=like.device)
    return buf


SYNC_FREE: bool | None = None
"""Masked, host-sync-free handling of ignored tokens: None = on CUDA only (on the CPU a sync is free
and removing ignored tokens up front is cheaper); True/False force it (tests run it on the CPU)."""


def _sync_free(cfg: _Config) -> bool:
    return cfg.device_type == "cuda" if SYNC_FREE is None else SYNC_FREE


def _folds_bias(x: Tensor, weight: Tensor | None, has_bias: bool, cfg: _Config) -> bool:
    """Whether the logits matmul takes the bias in as an extra column: [x, 1] @ [W, b]^T.

    On CPU, addmm(b, x, W^T) first broadcasts b into the (N, V) output and then accumulates the
    product into it, one extra (N, V) pass per chunk; the (d_t + 1)-wide matmul costs nothing extra
    (measured: 54.8 ms vs 64.6 ms for 512 x 256 x 32768). Only the forward product is widened: the
    gradient products use the d_t-wide views (strided, equally fast), since d_t + 1-wide outputs are
    slower. Float32 dense heads on CPU (cuBLAS adds the bias in its epilogue), and only when the
    tokens outnumber the width (the (V, d_t + 1) buffer is filled once per call)."""
    return (
        has_bias
        and weight is not None
        and cfg.structured is None
        and cfg.device_type == "cpu"
        and cfg.compute_dtype == torch.float32
        and weight.dtype == torch.float32
        and 2 * x.shape[0] >= weight.shape[1]
    )


def _scaled(weight: Tensor, scale: Tensor | None, out: Tensor | None) -> Tensor:
    """(V, d_t) weight times the per-row (V,) or scalar (0-d) scale (into ``out`` when given)."""
    if scale is None:
        return weight
    m = (scale.unsqueeze(1) if scale.dim() == 1 else scale).to(weight.dtype)
    return torch.mul(weight, m, out=out) if out is not None else weight * m


class ChunkedCrossEntropy(torch.autograd.Function):
    """Mean (label-smoothed) cross-entropy of cap(x @ (m W)^T + b) over kept tokens, chunk by chunk.

    forward(x (N, d_t), weight W (V, d_t) or None when cfg.structured, bias (V,) or None,
    scale m ((V,) per-row, 0-d, or None), targets (N,) long, cfg, needs: which of (x, weight, bias,
    scale) need a gradient) -> 0-d float32 loss. With ``cfg.norm_power`` p the per-row scale is
    m_v = scale_v ||W_v||^p (``Head.norm_power``): the row norms and their gradient
    dL/dW_v += p m_v <dL/dW_eff[v], W_v> / ||W_v||^2 W_v are computed here, in place, instead of by
    autograd (whose norm backward allocates two fresh (V, d_t) tensors per step).

    The scale is applied here rather than by autograd: m W is written into a reused buffer, and the
    gradients dL/dm_v = <dL/dW_eff[v], W[v]> and dL/dW = m dL/dW_eff (in place) need no fresh
    (V, d_t) tensors, which autograd's multiply and its backward would allocate (and page-fault)
    at every step.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, scale, coef, targets, cfg: _Config, needs: tuple[bool, ...]):  # type: ignore[override]
        with torch.autocast(cfg.device_type, enabled=False):
            keep = targets != cfg.ignore_index
            v = cfg.structured.vocab_size if cfg.structured is not None else weight.shape[0]
            mask = None
            if _sync_free(cfg):
                # no host sync: ignored tokens stay (target 0) and are masked; the kept count stays
                # on the device. Out-of-range targets are not checked here (the device's gather asserts).
                kf = keep.to(torch.float32)
                n_kept = kf.sum()
                idx, xk, tk, mask = None, x, torch.where(keep, targets, 0), (kf, n_kept)
            else:
                n_kept = int(keep.sum())
                if n_kept < targets.numel():
                    idx = keep.nonzero().squeeze(1)
                    xk, tk = x.index_select(0, idx), targets.index_select(0, idx)
                else:
                    idx, xk, tk = None, x, targets
                _check_targets(tk, v, cfg.ignore_index)
            xk = xk.to(cfg.compute_dtype)
            # grads w.r.t. x, W_eff, b (the whole bias: the c ||W_v||^2 term's gradients derive from it)
            inner = (needs[0], needs[1] or needs[3], needs[2] or (coef is not None and (needs[1] or needs[4])))
            fused = any(inner) and not cfg.recompute
            w = None
            m = scale
            if weight is not None and cfg.norm_power is not None:
                n32 = torch.linalg.vector_norm(weight, dim=-1, dtype=torch.float32)
                ctx.norm_dead = n32 < NORM_EPS  # clamped rows: no gradient through their norm
                n = n32.clamp_min(NORM_EPS).to(weight.dtype)
                npart = n.reciprocal() if cfg.norm_power == -1 else n.pow(cfg.norm_power)
                m = npart if scale is None else npart * scale
                ctx.norm = (n, npart, m)
            fold = not cfg.recompute and _folds_bias(xk, weight, bias is not None or coef is not None, cfg)
            if fold:  # W_eff is written into the first d_t columns of [W_eff, b]
                d = weight.shape[1]
                wa = _matrix_buffer("w_aug", weight, weight.dtype, (weight.shape[0], d + 1))
                w = _scaled(weight, m, wa[:, :d]) if m is not None else wa[:, :d].copy_(weight)
            elif weight is not None:
                out = _matrix_buffer("w_eff", weight, weight.dtype) if m is not None and not cfg.recompute else None
                w = _scaled(weight, m, out).to(cfg.compute_dtype)
            if coef is not None:
                sq = torch.linalg.vector_norm(weight, dim=-1, dtype=torch.float32).square_().to(weight.dtype)
                ctx.sq = sq
                bias = sq * coef if bias is None else torch.addcmul(bias, sq, coef)
            b = None if bias is None else bias.to(cfg.compute_dtype)
            aug = None
            if fold:
                wa[:, d].copy_(b)
                xa = torch.empty(xk.shape[0], d + 1, dtype=xk.dtype, device=xk.device)
                xa[:, :d].copy_(xk)
                xa[:, d].fill_(1.0)
                xk, aug = xa[:, :d], (xa, wa)
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
    def backward(ctx, grad_loss):  # type: ignore[override]
        cfg, needs = ctx.cfg, ctx.needs
        with torch.autocast(cfg.device_type, enabled=False):
            if cfg.recompute:
                weight, scale, coef, xk, w, b, tk = ctx.saved_tensors
                _, dx, dwe, db = _grad_pass(xk, tk, w, b, ctx.inner, cfg, loss_too=False, mask=ctx.mask)
            else:
                weight, scale, coef = ctx.saved_tensors
                dx, dwe, db = ctx.grads
                del ctx.grads
            g = grad_loss.float() / ctx.n_kept  # inf (so nan gradients) when every token is ignored
            if dx is not None:
                dx = dx.mul_(g).to(ctx.x_dtype)
                if ctx.idx is not None:
                    full = dx.new_zeros(ctx.x_shape)
                    full.index_copy_(0, ctx.idx, dx)
                    dx = full
            dw = ds = None
            # dwe is the gradient of the *sum* of token losses; the factor g is folded into the one
            # in-place pass that scales it anyway (a V x d pass fewer)
            if dwe is not None and cfg.norm_power is not None:
                n, npart, m = ctx.norm
                w32 = weight.float()
                # g_v = <dL/dW_eff[v], W_v> = dL/dm_v (before dwe is scaled in place)
                gm = torch.mul(dwe, w32, out=_matrix_buffer("tmp", dwe, dwe.dtype)).sum(dim=1).mul_(g)
                if needs[3]:
                    ds = gm * npart.float()
                    ds = (ds if scale.dim() == 1 else ds.sum()).to(scale.dtype)
                if needs[1]:
                    n32, m32 = n.float(), m.float()
                    k = (gm * m32 * cfg.norm_power / (n32 * n32)).masked_fill_(ctx.norm_dead, 0.0)
                    dw = dwe.mul_((m32 * g).unsqueeze(1)).addcmul_(w32, k.unsqueeze(1))
            elif dwe is not None:
                if needs[3]:  # before dwe is scaled in place
                    w32 = weight.float()
                    if scale.dim() == 1:
                        ds = torch.mul(dwe, w32, out=_matrix_buffer("tmp", dwe, dwe.dtype)).sum(dim=1)
                    else:
                        ds = torch.dot(dwe.reshape(-1), w32.reshape(-1))
                    ds = (ds * g).to(scale.dtype)
                if needs[1]:
                    dw = dwe.mul_(g if scale is None else (scale.unsqueeze(1) if scale.dim() == 1 else scale) * g)
            db = None if db is None else db.mul_(g)
            dc = None
            if coef is not None and db is not None:
                # bias_v = learned_v + c ||W_v||^2: dL/dc = <dL/db, ||W||^2>, dL/dW_v += 2 c dL/db_v W_v
                if needs[4]:
                    dc = torch.dot(db, ctx.sq.float()).to(coef.dtype)
                if dw is not None:
                    dw.addcmul_(weight.float(), (db * (2.0 * coef.float())).unsqueeze(1))
            dw = None if dw is None else dw.to(weight.dtype)
            db = None if db is None or not needs[2] else db.to(ctx.b_dtype)
        return dx, dw, db, ds, dc, None, None, None


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
    (default: ``default_chunk(V, device)``); ``recompute`` selects the recompute-in-backward schedule.
    """
    device_type = x.device.type
    autocast = torch.is_autocast_enabled(device_type)
    compute_dtype = torch.get_autocast_dtype(device_type) if autocast else x.dtype
    plain_rows = head.row_scale is None and head.norm_power is None and head.sqnorm_bias is None
    structured = head.structured if plain_rows else None
    if structured is not None:
        if head.scale is not None:
            x = x * head.scale
        weight = None
        vocab = structured.vocab_size
        scale = None
    else:
        weight = head.weight
        vocab = weight.shape[0]
        m = head.row_scale  # the row-norm factor (head.norm_power) is applied inside the function
        if head.scale is not None:
            m = head.scale if m is None else m * head.scale
        scale = None if m is None else (m if isinstance(m, Tensor) else torch.tensor(float(m), device=x.device))
    bias = head.bias
    coef = head.sqnorm_bias
    if coef is not None and not isinstance(coef, Tensor):
        coef = torch.tensor(float(coef), device=x.device)
    chunk = default_chunk(vocab, device_type) if chunk_size is None else int(chunk_size)
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
        norm_power=None if structured is not None else head.norm_power,
    )
    grad = torch.is_grad_enabled()
    needs = (
        grad and x.requires_grad,
        grad and weight is not None and weight.requires_grad,
        grad and bias is not None and bias.requires_grad,
        grad and scale is not None and scale.requires_grad,
        grad and coef is not None and coef.requires_grad,
    )
    return ChunkedCrossEntropy.apply(x, weight, bias, scale, coef, targets, cfg, needs)
