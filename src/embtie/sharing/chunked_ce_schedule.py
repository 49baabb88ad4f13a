"""Chunk schedule and device-path decisions of the chunked cross-entropy.

- which tokens go through the chunks (``_select_tokens``): on the CPU path the ignored ones are
  removed up front (compacting, with a host sync and a target range check) and their rows of dx are
  put back afterwards (``_scatter_rows``); on the sync-free path (``_sync_free``: CUDA by default)
  they stay in place and are masked out, the kept count staying on the device;
- whether the bias rides in the logits matmul as an extra column (``_folds_bias``, ``_augment``);
- the loop over the chunks itself (``_grad_pass``), one pass computing the loss and/or the gradients.
"""

from __future__ import annotations

import torch
from torch import Tensor

from embtie.errors import DataError
from embtie.sharing.chunked_ce_config import _Config, _matrix
from embtie.sharing.chunked_ce_maths import (
    _chunk_grad,
    _chunk_logprobs,
    _chunk_logz,
    _chunk_loss,
    _contract,
    _smoothing_correction,
)
from embtie.sharing.chunked_ce_workspace import _workspace


def _sync_free(cfg: _Config) -> bool:
    """Masked, host-sync-free handling of ignored tokens (``cfg.sync_free``, None: on CUDA only)."""
    return cfg.device_type == "cuda" if cfg.sync_free is None else cfg.sync_free


def _check_targets(tk: Tensor, v: int, ignore_index: int) -> None:
    if tk.numel() and (int(tk.min()) < 0 or int(tk.max()) >= v):
        bad = int(tk.min()) if int(tk.min()) < 0 else int(tk.max())
        raise DataError(
            f"target id {bad} is outside the vocabulary [0, {v}); "
            f"fix the data or mark padding with ignore_index={ignore_index}"
        )


def _select_tokens(
    x: Tensor, targets: Tensor, cfg: _Config, v: int
) -> tuple[Tensor | None, Tensor, Tensor, tuple[Tensor, Tensor] | None, int | Tensor]:
    """(x, targets) -> (idx, xk, tk, mask, n_kept): the rows and targets the chunks go over.

    Compacting (CPU): the kept tokens' rows (``idx`` their positions, None when all are kept), mask
    None, n_kept an int. Sync-free: every row, ignored targets replaced by 0, idx None, mask
    (keep (N,) float 0/1, kept count 0-d) and n_kept that count (a tensor)."""
    keep = targets != cfg.ignore_index
    if _sync_free(cfg):
        # no host sync: ignored tokens stay (target 0) and are masked; the kept count stays
        # on the device. Out-of-range targets are not checked here (the device's gather asserts).
        kf = keep.to(cfg.acc_dtype)
        count = kf.sum()
        return None, x, torch.where(keep, targets, 0), (kf, count), count
    n_kept = int(keep.sum())
    if n_kept < targets.numel():
        idx = keep.nonzero().squeeze(1)
        xk, tk = x.index_select(0, idx), targets.index_select(0, idx)
    else:
        idx, xk, tk = None, x, targets
    _check_targets(tk, v, cfg.ignore_index)
    return idx, xk, tk, None, n_kept


def _scatter_rows(dx: Tensor, idx: Tensor, shape: torch.Size) -> Tensor:
    """The kept tokens' rows ``dx`` put back at their positions ``idx`` of a zero tensor of ``shape``."""
    full = dx.new_zeros(shape)
    full.index_copy_(0, idx, dx)
    return full


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


def _augment(xk: Tensor, wa: Tensor, b: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Bias folding: b into the last column of ``wa`` = [W_eff, b] (V, d_t + 1), whose first d_t
    columns hold W_eff already; xk (n, d_t) -> (the d_t-wide view of [xk, 1], ([xk, 1], [W_eff, b]))."""
    d = wa.shape[1] - 1
    wa[:, d].copy_(b)
    xa = torch.empty(xk.shape[0], d + 1, dtype=xk.dtype, device=xk.device)
    xa[:, :d].copy_(xk)
    xa[:, d].fill_(1.0)
    return xa[:, :d], (xa, wa)


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

    Gradients are of the *sum* of token losses, in cfg.acc_dtype (the caller scales them). ``aug``:
    ([x, 1] (n, d_t + 1), [W, b] (V, d_t + 1)) whose product gives the logits with the bias in
    (``_folds_bias``); xk, w and b are then views / the column of these."""
    dev, acc = xk.device, cfg.acc_dtype
    n = xk.shape[0]
    dx = torch.empty(xk.shape, dtype=acc, device=dev) if needs[0] else None
    dw = torch.empty(_matrix(w).shape, dtype=acc, device=dev) if needs[1] and n else None
    db = None
    if needs[2]:
        assert b is not None  # the bias whose gradient is asked for
        db = torch.zeros(b.shape, dtype=acc, device=dev)
    want = any(needs)
    total = torch.zeros((), dtype=acc, device=dev)
    v = cfg.structured.vocab_size if cfg.structured is not None else _matrix(w).shape[0]
    ws = _workspace(min(cfg.chunk, n), v, xk.shape[1], cfg, dev, dw is not None)
    for start in range(0, n, cfg.chunk):
        sl = slice(start, start + cfg.chunk)
        xc, tc = xk[sl], tk[sl]
        if aug is None:
            lp, t = _chunk_logprobs(xc, w, b, cfg, ws)
        else:
            lp, t = _chunk_logprobs(aug[0][sl], aug[1], None, cfg, ws)
        mc = None if mask is None else mask[0][sl]
        log_z = _chunk_logz(lp, tc, cfg, ws) if cfg.z_loss else None
        if loss_too:
            total += _chunk_loss(lp, tc, cfg, mc, log_z)
        if want:
            dzc = _chunk_grad(lp, t, tc, cfg, ws, mc, log_z)
            _contract(dzc, xc, w, None if dx is None else dx[sl], dw, db, cfg, ws, start == 0)
    if want:
        keep, count = (None, n) if mask is None else mask
        _smoothing_correction(xk, w, dx, dw, db, count, cfg, keep)
    return total, dx, dw, db
