"""The tiled cross-entropy as two custom operators (``embtie::tiled_ce`` and its backward) around the
Triton kernels of ``tiled_ce_kernels``: eager calls and ``torch.compile`` (one opaque kernel each way, no
graph break) run the same code.

Forward: x (N, D), W (V, D) (float32 or bfloat16, multiplied in the compute dtype), an optional per-row scale m (V,)
and bias b (V,) in float32, targets (N,) -> (mean loss (0-d float32), lse (N,) float32). It holds nothing
but lse for backward: the kernel writes four (S, N) float32 partials per vocabulary split S, combined here.
Backward recomputes every (BLOCK_N, BLOCK_V) tile from x, W and lse, twice (one kernel per row block for
dx, one per vocabulary tile for dW, dm and db: no atomics, deterministic), and returns dx (N, D), dW (V, D),
dm (V,), db (V,), accumulated in float32 (for float32 x and W, under autocast too, the accumulators are
the gradients; for bfloat16 ones they are 2x the size of dx and dW, rounded at the end).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch
from torch import Tensor

_KERNELS = "embtie.sharing.tiled_ce_kernels"


@dataclass(frozen=True)
class Blocks:
    """Tile sizes and launch settings of the kernels: BLOCK_N tokens x BLOCK_V vocabulary rows, summed
    over BLOCK_D slices of the hidden width; ``programs``: how many forward programs to aim for (the
    vocabulary is split into that many / row blocks parts, whose partial log-sum-exps are combined)."""

    n: int = 64
    v: int = 128
    d: int = 64
    warps: int = 8
    stages: int = 3
    programs: int = 528


COMPUTE_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
"""the operators' ``compute`` argument: the dtype the dots multiply in."""

BLOCKS: Blocks | None = None
"""Force these tile sizes (the tests use small tiles so that tiny problems span several); None: per dtype."""


def default_blocks(dtype: torch.dtype, device: torch.device) -> Blocks:
    """The tiles for a compute dtype on a device: 64 x 128 x 64 for bfloat16, 64 x 64 x 32 for float32
    (twice the bytes per element), about four forward programs per streaming multiprocessor."""
    if BLOCKS is not None:
        return BLOCKS
    programs = 4 * torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 8
    if dtype == torch.float32:
        return Blocks(n=64, v=64, d=32, warps=4, stages=3, programs=programs)
    return Blocks(programs=programs)


_loaded_interpreted: bool | None = None
"""whether the kernels module was last imported under the interpreter (None: not yet imported)."""


def kernels() -> ModuleType:
    """The kernels module, imported on first use (it needs triton); reloaded when the interpreter setting
    (``TRITON_INTERPRET``) changed since it was imported, since ``triton.jit`` reads it when it decorates."""
    global _loaded_interpreted
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    if interpret:
        _interpreted_language()
    module = sys.modules.get(_KERNELS)
    if module is None:
        module = importlib.import_module(_KERNELS)
    elif _loaded_interpreted != interpret:
        module = importlib.reload(module)
    _loaded_interpreted = interpret
    return module


def _interpreted_language() -> None:
    """Triton's own jit'd helpers (tl.sum, tl.max, tl.zeros, ...) are decorated when triton.language is
    first imported; when that happened before TRITON_INTERPRET=1 was set (a test process where torch
    imported triton first), decorate them again for the interpreter, which cannot call compiled ones."""
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(tl.standard.zeros, InterpretedFunction):
        importlib.reload(tl.standard)
        importlib.reload(tl)


def _precision(dtype: torch.dtype) -> str:
    """tl.dot's input precision: float32 follows torch's matmul setting (TF32 only where torch allows it,
    so the logits match F.linear's); other dtypes multiply natively."""
    if dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32:
        return "ieee"
    return "tf32"


def _upcast(x: Tensor, dot: torch.dtype) -> bool:
    """Widen bfloat16 dot operands to float32 in the kernels: only under the interpreter (CPU tensors),
    whose dot cannot multiply bfloat16 (``tiled_ce_kernels._operand``)."""
    return x.device.type == "cpu" and dot != torch.float32


def _cap_code(softcap: float | None, cap_form: str) -> int:
    if softcap is None:
        return 0
    return 1 if cap_form == "tanh" else 2


def _cap_args(softcap: float | None, cap_scale: float | None, cap_shift: float) -> tuple[float, float, float]:
    """(c, s, shift) as kernel scalars; s defaults to c / 4 (``CapShape.sigmoid_scale``)."""
    c = 1.0 if softcap is None else float(softcap)
    return c, c / 4.0 if cap_scale is None else float(cap_scale), float(cap_shift)


def _device_guard(x: Tensor) -> Any:
    """The context that makes x's GPU the current one for the launch (nothing on the CPU)."""
    return torch.cuda.device(x.device) if x.device.type == "cuda" else contextlib.nullcontext()


@torch.library.custom_op("embtie::tiled_ce", mutates_args=())
def tiled_ce(
    x: Tensor,
    weight: Tensor,
    scale: Tensor | None,
    bias: Tensor | None,
    targets: Tensor,
    compute: str,
    ignore_index: int,
    label_smoothing: float,
    softcap: float | None,
    cap_form: str,
    cap_scale: float | None,
    cap_shift: float,
    z_loss: float,
) -> tuple[Tensor, Tensor]:
    """(mean loss over kept tokens (0-d float32), log-sum-exp of every row (N,) float32).

    x (N, D), weight (V, D), each float32 or bfloat16, multiplied in ``compute`` ("float32" or "bfloat16":
    the operands are rounded tile by tile, no copy); scale, bias (V,) float32 or None; targets (N,) int64."""
    x, weight = x.contiguous(), weight.contiguous()
    n, d = x.shape
    v = weight.shape[0]
    dot = COMPUTE_DTYPES[compute]
    blocks = default_blocks(dot, x.device)
    row_blocks = -(-n // blocks.n)
    tiles = -(-v // blocks.v)
    splits = max(1, min(tiles, -(-blocks.programs // row_blocks)))
    per_split = 1 << (-(-tiles // splits) - 1).bit_length()  # a power of two: few compiled variants
    splits = -(-tiles // per_split)  # every split starts inside the vocabulary
    part = torch.empty(4, splits, n, dtype=torch.float32, device=x.device)
    c, s, shift = _cap_args(softcap, cap_scale, cap_shift)
    dummy = part[0, 0]
    with _device_guard(x):
        kernels().tiled_ce_forward_kernel[(row_blocks, splits)](
            x, weight, dummy if scale is None else scale, dummy if bias is None else bias, targets,
            part[0], part[1], part[2], part[3],
            n, v, x.stride(0), weight.stride(0),
            c, s, shift,
            D=d, TILES_PER_SPLIT=per_split, HAS_SCALE=scale is not None, HAS_BIAS=bias is not None,
            CAP=_cap_code(softcap, cap_form),
            PRECISION=_precision(dot), DOT=kernels().DOTS[compute], UPCAST=_upcast(x, dot),
            BLOCK_N=blocks.n, BLOCK_V=blocks.v, BLOCK_D=blocks.d,
            num_warps=blocks.warps, num_stages=blocks.stages,
        )  # fmt: skip
    top = part[0].max(dim=0).values
    lse = top + (part[1] * torch.exp(part[0] - top)).sum(dim=0).log()
    row = lse - (1.0 - label_smoothing) * part[2].sum(dim=0) - (label_smoothing / v) * part[3].sum(dim=0)
    if z_loss:
        row = row + z_loss * lse.square()
    keep = (targets != ignore_index).to(torch.float32)
    return (row @ keep) / keep.sum(), lse  # 0 / 0 = nan when every token is ignored, like the plain loss


@tiled_ce.register_fake
def _(
    x: Tensor,
    weight: Tensor,
    scale: Tensor | None,
    bias: Tensor | None,
    targets: Tensor,
    compute: str,
    ignore_index: int,
    label_smoothing: float,
    softcap: float | None,
    cap_form: str,
    cap_scale: float | None,
    cap_shift: float,
    z_loss: float,
) -> tuple[Tensor, Tensor]:
    return x.new_empty((), dtype=torch.float32), x.new_empty((x.shape[0],), dtype=torch.float32)


@torch.library.custom_op("embtie::tiled_ce_backward", mutates_args=())
def tiled_ce_backward(
    grad: Tensor,
    x: Tensor,
    weight: Tensor,
    scale: Tensor | None,
    bias: Tensor | None,
    targets: Tensor,
    lse: Tensor,
    compute: str,
    ignore_index: int,
    label_smoothing: float,
    softcap: float | None,
    cap_form: str,
    cap_scale: float | None,
    cap_shift: float,
    z_loss: float,
    needs: list[bool],
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(dx (N, D) x's dtype, dW (V, D) W's dtype, dm (V,), db (V,) float32) of ``grad`` (0-d) times the
    loss; a gradient ``needs`` (x, W, m, b) does not ask for is an empty placeholder."""
    x, weight = x.contiguous(), weight.contiguous()
    n, d = x.shape
    v = weight.shape[0]
    dot = COMPUTE_DTYPES[compute]
    blocks = default_blocks(dot, x.device)
    keep = (targets != ignore_index).to(torch.float32)
    g = keep * (grad.to(torch.float32) / keep.sum())  # each row's weight in the mean
    need_dx, need_dw, need_dm, need_db = (
        needs[0], needs[1], needs[2] and scale is not None, needs[3] and bias is not None
    )  # fmt: skip
    f32 = torch.float32
    dx = torch.zeros(n, d, dtype=f32, device=x.device) if need_dx else x.new_empty(0, dtype=f32)
    dw = torch.zeros(v, d, dtype=f32, device=x.device) if need_dw else x.new_empty(0, dtype=f32)
    dm = torch.zeros(v, dtype=f32, device=x.device) if need_dm else x.new_empty(0, dtype=f32)
    db = torch.zeros(v, dtype=f32, device=x.device) if need_db else x.new_empty(0, dtype=f32)
    c, s, shift = _cap_args(softcap, cap_scale, cap_shift)
    row_blocks, v_tiles = -(-n // blocks.n), -(-v // blocks.v)
    shared = dict(
        HAS_SCALE=scale is not None, HAS_BIAS=bias is not None, CAP=_cap_code(softcap, cap_form),
        PRECISION=_precision(dot), DOT=kernels().DOTS[compute], UPCAST=_upcast(x, dot),
        BLOCK_N=blocks.n, BLOCK_V=blocks.v, BLOCK_D=blocks.d, num_warps=blocks.warps, num_stages=blocks.stages,
    )  # fmt: skip
    m_arg, b_arg = lse if scale is None else scale, lse if bias is None else bias
    with _device_guard(x):
        if need_dx:  # fewer row blocks than multiprocessors: halve them (each program owns its rows' dx)
            bn = blocks.n if row_blocks >= blocks.programs // 4 else max(16, blocks.n // 2)
            kernels().tiled_ce_backward_x_kernel[(-(-n // bn),)](
                x, weight, m_arg, b_arg, targets, lse, g, dx,
                n, v, x.stride(0), weight.stride(0), v_tiles,
                float(label_smoothing), float(z_loss), c, s, shift, D=d, **{**shared, "BLOCK_N": bn},
            )  # fmt: skip
        if need_dw or need_dm or need_db:
            kernels().tiled_ce_backward_w_kernel[(v_tiles,)](
                x, weight, m_arg, b_arg, targets, lse, g, dw, dm, db,
                n, v, x.stride(0), weight.stride(0), row_blocks,
                float(label_smoothing), float(z_loss), c, s, shift, D=d,
                NEED_DW=need_dw, NEED_DM=need_dm, NEED_DB=need_db, **shared,
            )  # fmt: skip
    return dx.to(x.dtype), dw.to(weight.dtype), dm, db


@tiled_ce_backward.register_fake
def _(
    grad: Tensor,
    x: Tensor,
    weight: Tensor,
    scale: Tensor | None,
    bias: Tensor | None,
    targets: Tensor,
    lse: Tensor,
    compute: str,
    ignore_index: int,
    label_smoothing: float,
    softcap: float | None,
    cap_form: str,
    cap_scale: float | None,
    cap_shift: float,
    z_loss: float,
    needs: list[bool],
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    f32 = torch.float32
    dx = torch.empty_like(x) if needs[0] else x.new_empty(0)
    dw = torch.empty_like(weight) if needs[1] else weight.new_empty(0)
    dm = x.new_empty((weight.shape[0],), dtype=f32) if needs[2] and scale is not None else x.new_empty(0, dtype=f32)
    db = x.new_empty((weight.shape[0],), dtype=f32) if needs[3] and bias is not None else x.new_empty(0, dtype=f32)
    return dx, dw, dm, db


_SETTINGS = slice(5, 13)
"""the positions of compute ... z_loss among tiled_ce's inputs."""


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Tensor, Tensor]) -> None:
    x, weight, scale, bias, targets = inputs[:5]
    ctx.settings = inputs[_SETTINGS]
    ctx.has = (scale is not None, bias is not None)
    ctx.save_for_backward(x, weight, scale, bias, targets, output[1])


def _backward(ctx: Any, grad: Tensor, _lse_grad: Tensor) -> tuple[Tensor | None, ...]:
    x, weight, scale, bias, targets, lse = ctx.saved_tensors
    needs = [bool(b) for b in ctx.needs_input_grad[:4]]
    dx, dw, dm, db = tiled_ce_backward(grad, x, weight, scale, bias, targets, lse, *ctx.settings, needs)
    found = (dx, dw, dm if ctx.has[0] else None, db if ctx.has[1] else None)
    grads = tuple(t if need and t is not None else None for t, need in zip(found, needs, strict=True))
    return (*grads, *(None,) * 9)


tiled_ce.register_autograd(_backward, setup_context=_setup_context)
