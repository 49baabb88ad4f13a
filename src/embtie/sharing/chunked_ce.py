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
float32; gradients are accumulated in float32. A float64 head and x (no autocast) run entirely in
float64 (``_Config.acc_dtype``: float32 for every lower precision, float64 for float64).

Layout: this module is the public entry (``chunked_cross_entropy``, ``default_chunk``,
``release_workspace``, the ``SYNC_FREE`` setting) and re-exports the names of the modules that hold
the implementation: ``chunked_ce_config`` (``_Config``, chunk sizes), ``chunked_ce_workspace``
(reused buffers), ``chunked_ce_maths`` (per-chunk maths), ``chunked_ce_schedule`` (token selection,
bias folding, the chunk loop), ``chunked_ce_weight`` (effective weight and its chain rule) and
``chunked_ce_function`` (the autograd Function).
"""

from __future__ import annotations

import torch
from torch import Tensor

from embtie.sharing.chunked_ce_config import CHUNK_ELEMENTS as CHUNK_ELEMENTS
from embtie.sharing.chunked_ce_config import CUDA_CHUNK_ELEMENTS as CUDA_CHUNK_ELEMENTS
from embtie.sharing.chunked_ce_config import CUDA_MIN_CHUNK as CUDA_MIN_CHUNK
from embtie.sharing.chunked_ce_config import _Config, default_chunk
from embtie.sharing.chunked_ce_function import ChunkedCrossEntropy
from embtie.sharing.chunked_ce_maths import _chunk_grad as _chunk_grad
from embtie.sharing.chunked_ce_maths import _chunk_logprobs as _chunk_logprobs
from embtie.sharing.chunked_ce_maths import _chunk_loss as _chunk_loss
from embtie.sharing.chunked_ce_maths import _contract as _contract
from embtie.sharing.chunked_ce_maths import _kept_sum as _kept_sum
from embtie.sharing.chunked_ce_maths import _smoothing_correction as _smoothing_correction
from embtie.sharing.chunked_ce_schedule import _check_targets as _check_targets
from embtie.sharing.chunked_ce_schedule import _folds_bias as _folds_bias
from embtie.sharing.chunked_ce_schedule import _grad_pass as _grad_pass
from embtie.sharing.chunked_ce_schedule import _sync_free as _sync_free
from embtie.sharing.chunked_ce_weight import NORM_EPS as NORM_EPS
from embtie.sharing.chunked_ce_weight import _scaled as _scaled
from embtie.sharing.chunked_ce_workspace import _CACHE as _CACHE
from embtie.sharing.chunked_ce_workspace import _MATRIX_CACHE as _MATRIX_CACHE
from embtie.sharing.chunked_ce_workspace import _ONES as _ONES
from embtie.sharing.chunked_ce_workspace import _matrix_buffer as _matrix_buffer
from embtie.sharing.chunked_ce_workspace import _ones as _ones
from embtie.sharing.chunked_ce_workspace import _Workspace as _Workspace
from embtie.sharing.chunked_ce_workspace import _workspace as _workspace
from embtie.sharing.chunked_ce_workspace import release_workspace
from embtie.sharing.head import Head, accumulation_dtype

__all__ = ["SYNC_FREE", "ChunkedCrossEntropy", "chunked_cross_entropy", "default_chunk", "release_workspace"]

SYNC_FREE: bool | None = None
"""Masked, host-sync-free handling of ignored tokens: None = on CUDA only (on the CPU a sync is free
and removing ignored tokens up front is cheaper); True/False force it (tests run it on the CPU).
Read by ``chunked_cross_entropy`` at each call (it is passed on as ``_Config.sync_free``)."""


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

    Equal (to float rounding) to ``embtie.sharing.loss.plain_cross_entropy`` (F.cross_entropy of
    head.logits(x) in at least float32) and its gradients w.r.t. x and every tensor the head was built
    from. ``chunk_size`` tokens per chunk (default: ``default_chunk(V, device)``); ``recompute``
    selects the recompute-in-backward schedule.
    """
    device_type = x.device.type
    autocast = torch.is_autocast_enabled(device_type)
    compute_dtype = torch.get_autocast_dtype(device_type) if autocast else x.dtype
    acc = accumulation_dtype(compute_dtype)  # python-number scales become 0-d tensors of this dtype
    if head.factor is not None:
        raise ValueError("a factorized head must be folded first: embtie.sharing.factorized.fold_factor")
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
        # the row-norm factor (head.norm_power) is applied inside the function
        m: Tensor | float | None = head.row_scale
        if head.scale is not None:
            m = head.scale if m is None else m * head.scale
        if m is not None and not isinstance(m, Tensor):
            m = torch.tensor(float(m), dtype=acc, device=x.device)
        scale = m
    bias = head.bias
    coef = head.sqnorm_bias
    if coef is not None and not isinstance(coef, Tensor):
        coef = torch.tensor(float(coef), dtype=acc, device=x.device)
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
        sync_free=SYNC_FREE,
        z_loss=head.z_loss,
        cap_shape=head.cap_form,
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
