"""Reused buffers of the chunked cross-entropy: the chunk workspace (``_Workspace``, ``_workspace``),
the (V, d_t) scratch matrices (``_matrix_buffer``), the cached vector of ones (``_ones``) and
``release_workspace`` which frees the first two.

Fresh multi-MiB tensors would be page-faulted in anew at every chunk and step on the CPU (large
allocations are mmap-ed and returned to the system when freed); reusing them is what makes the
chunked loss as fast as the plain one.
"""

from __future__ import annotations

import torch
from torch import Tensor

from embtie.sharing.chunked_ce_config import _Config


class _Workspace:
    """Chunk-sized buffers reused by every chunk (out= ops), and by the next call of the same shape.

    Fresh multi-MiB tensors would be page-faulted in anew for every chunk on CPU (large allocations
    are mmap-ed and returned to the system when freed); reusing them is what makes the chunked loss
    as fast as the plain one. The most recent workspace is kept (a few chunk x V buffers, e.g.
    3 x 64 MiB at V = 32768); ``release_workspace()`` frees it.
    """

    def __init__(self, rows: int, v: int, d: int, cfg: _Config, device: torch.device) -> None:
        acc, cd = cfg.acc_dtype, cfg.compute_dtype  # float32 (float64 for float64)
        self.rows, self.v, self.d, self.device = rows, v, d, device
        self.z = torch.empty(rows, v, dtype=acc, device=device)  # logits, or tanh(u / cap)
        self.lp = torch.empty(rows, v, dtype=acc, device=device)  # log-probabilities -> dz
        self.u = None if cd == acc else torch.empty(rows, v, dtype=cd, device=device)  # matmul out / dz
        self.zc: Tensor | None = None  # soft-cap input (allocated when a capped head comes)
        self.dw: Tensor | None = None  # (V, d_t) product buffer for dW in a low-precision compute dtype

    def ensure(self, cfg: _Config, dw: bool) -> _Workspace:
        """Add the buffers this call needs that earlier calls did not (kept for later calls)."""
        if cfg.cap is not None and self.zc is None:
            self.zc = torch.empty(self.rows, self.v, dtype=cfg.acc_dtype, device=self.device)
        if dw and cfg.compute_dtype != cfg.acc_dtype and self.dw is None:
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


def release_workspace() -> None:
    """Free the cached chunk buffers and (V, d_t) scratch matrices (re-created by the next call)."""
    _CACHE.clear()
    _MATRIX_CACHE.clear()


_ONES: dict[tuple, Tensor] = {}


def _ones(n: int, like: Tensor) -> Tensor:
    """A cached vector of n ones of like's dtype on like's device."""
    key = (like.device, like.dtype)
    v = _ONES.get(key)
    if v is None or v.shape[0] < n:
        v = _ONES[key] = torch.ones(n, dtype=like.dtype, device=like.device)
    return v[:n]
