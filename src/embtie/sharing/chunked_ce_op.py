"""The chunked cross-entropy as one opaque operator for ``torch.compile`` (``embtie::chunked_ce``).

The chunked loss (``chunked_ce``) reuses buffers with ``out=`` ops, compacts ignored tokens on the host
and has a hand-written autograd Function: nothing a tracer can follow. Registered as a custom operator,
the compiler treats it as one kernel (no graph break) and the eager code runs inside it unchanged, with
its speed and memory: the N x V logits are never held.

The operator takes the effective head, built by the caller with ordinary (traced) autograd:
x (N, d_t), W (V, d_t) with every scale folded in, an optional bias (V,), targets (N,), and returns the
mean loss together with its gradients w.r.t. x, W and b, computed in the same pass as the loss (the
fused schedule: three matmuls per chunk, as eager). Its backward only scales them by the incoming
gradient. Without a gradient to compute (evaluation), it computes the loss alone and returns empty
gradients.

The autocast dtype is read where the call is traced and passed to the operator (``compute``), which runs
the eager loss under that autocast: a compiled graph does not carry the caller's autocast into an opaque
operator, and without it the matmuls ran in float32 under bf16 autocast (GPT-2 small on an H200 trained at
0.31x the plain loss's tokens/s, BENCHMARKS-cuda.md).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import Tensor

from embtie.sharing.chunked_ce import chunked_cross_entropy
from embtie.sharing.head import Head, accumulation_dtype, compute_dtype
from embtie.sharing.softcap import CapShape, SoftcapForm

_NO_GRADIENT = 0
"""numel of the placeholder returned for a gradient that was not computed."""


@torch.library.custom_op("embtie::chunked_ce", mutates_args=())
def chunked_ce(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    targets: Tensor,
    ignore_index: int,
    label_smoothing: float,
    softcap: float | None,
    cap_form: str,
    cap_scale: float | None,
    cap_shift: float,
    z_loss: float,
    chunk_size: int | None,
    grads: bool,
    compute: torch.dtype,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(mean loss (0-d), dloss/dx (N, d_t), dloss/dW (V, d_t), dloss/db (V,)); the gradients are empty
    placeholders when ``grads`` is False (and db when there is no bias). ``cap_*``: the soft-cap's
    ``CapShape`` (form tanh or sigmoid, scale, shift), as plain values an operator schema takes.
    ``compute``: the dtype the matmuls run in (the caller's autocast dtype, else x's)."""
    shape = CapShape(cast(SoftcapForm, cap_form), cap_scale, cap_shift)
    cast_to = torch.autocast(x.device.type, dtype=compute, enabled=compute != x.dtype)
    if not grads:
        with torch.no_grad(), cast_to:
            loss = _loss(x, weight, bias, targets, ignore_index, label_smoothing, softcap, shape, z_loss, chunk_size)
        return loss, x.new_empty(_NO_GRADIENT), weight.new_empty(_NO_GRADIENT), weight.new_empty(_NO_GRADIENT)
    with torch.enable_grad(), cast_to:
        xl, wl = x.detach().requires_grad_(), weight.detach().requires_grad_()
        bl = None if bias is None else bias.detach().requires_grad_()
        loss = _loss(xl, wl, bl, targets, ignore_index, label_smoothing, softcap, shape, z_loss, chunk_size)
        inputs = [xl, wl] if bl is None else [xl, wl, bl]
        found = torch.autograd.grad(loss, inputs)
    db = found[2] if bl is not None else weight.new_empty(_NO_GRADIENT)
    return loss.detach(), found[0], found[1], db


def _loss(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    targets: Tensor,
    ignore_index: int,
    label_smoothing: float,
    softcap: float | None,
    shape: CapShape,
    z_loss: float,
    chunk_size: int | None,
) -> Tensor:
    head = Head(weight=weight, bias=bias, softcap=softcap, cap_shape=shape, z_loss=z_loss)
    return chunked_cross_entropy(
        head, x, targets, ignore_index=ignore_index, label_smoothing=label_smoothing, chunk_size=chunk_size
    )


@chunked_ce.register_fake
def _(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    targets: Tensor,
    ignore_index: int,
    label_smoothing: float,
    softcap: float | None,
    cap_form: str,
    cap_scale: float | None,
    cap_shift: float,
    z_loss: float,
    chunk_size: int | None,
    grads: bool,
    compute: torch.dtype,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    loss = x.new_empty((), dtype=accumulation_dtype(x.dtype))
    if not grads:
        return loss, x.new_empty(_NO_GRADIENT), weight.new_empty(_NO_GRADIENT), weight.new_empty(_NO_GRADIENT)
    db = weight.new_empty(_NO_GRADIENT) if bias is None else torch.empty_like(bias)
    return loss, torch.empty_like(x), torch.empty_like(weight), db


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Tensor, ...]) -> None:
    ctx.has_bias = inputs[2] is not None
    ctx.save_for_backward(output[1], output[2], output[3])


def _backward(ctx: Any, g: Tensor, *_: Tensor) -> tuple[Tensor | None, ...]:
    dx, dw, db = ctx.saved_tensors
    return (
        g.to(dx.dtype) * dx,
        g.to(dw.dtype) * dw,
        g.to(db.dtype) * db if ctx.has_bias else None,
        *(None,) * 11,
    )


chunked_ce.register_autograd(_backward, setup_context=_setup_context)


def traced_chunked_cross_entropy(
    head: Head,
    x: Tensor,
    targets: Tensor,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    chunk_size: int | None = None,
) -> Tensor:
    """What ``torch.compile`` traces for the chunked loss: the head's effective weight and bias (ordinary
    autograd, so gradients reach E, scales and norms through them) and the ``embtie::chunked_ce`` operator.
    x: (N, d_t); targets: (N,) -> the mean loss (0-d)."""
    w, b = head.effective_weight(), head.full_bias()
    grads = torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or (b is not None and b.requires_grad))
    loss, _, _, _ = chunked_ce(
        x,
        w,
        b,
        targets,
        ignore_index,
        float(label_smoothing),
        head.softcap,
        head.cap_form.form,
        head.cap_form.scale,
        head.cap_form.shift,
        float(head.z_loss),
        chunk_size,
        grads,
        compute_dtype(x),
    )
    return loss

