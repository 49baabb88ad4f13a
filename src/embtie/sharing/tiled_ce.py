"""Tiled cross-entropy of a canonical head on CUDA: neither the N x V logits nor a chunk x V buffer.

The Triton kernels (``tiled_ce_kernels``, wrapped as operators in ``tiled_ce_op``) take the logits

    z_nv = cap( m_v (x_n . w_v) + b_v )

one (BLOCK_N, BLOCK_V) tile at a time, on chip. The forward keeps an online log-sum-exp per token and
saves only lse (N,) float32; the backward recomputes the tiles twice, once in a kernel whose programs own
row blocks (dx (N, D)) and once in one whose programs own vocabulary tiles (dW (V, D), dm (V,), db (V,)),
so each gradient is accumulated in float32 by one program, in place, without atomics (deterministic).
Five matmuls per tile in all (plain's three, the chunked recompute schedule's four): the price of holding
no chunk x V buffer and of a hidden width D too wide to keep a row block's dx in registers.

What the head's features cost:
- ``weight`` W (V, D) and x go in as they are (no copy): the kernels round each tile to the compute dtype
  (the autocast dtype under autocast), and a float32 W gets its float32 gradient straight from the
  accumulator;
- the per-row scale m = r_v ||w_v||^p s (``Head.combined_row_scale``: l2norm's and cosine's 1/||w_v||, sqnorm,
  nGPT, a logit scale) and the bias b = b_v + c ||w_v||^2 (``Head.full_bias``) are built as (V,) float32 tensors by
  ordinary autograd, which carries dm and db back to every learned tensor; the row norms' backward
  allocates one (V, D) temporary;
- soft-caps (tanh and sigmoid), label smoothing, the z-loss and ignore_index are applied in the kernel;
- a factorized head is folded first (``fold_factor``: x B^T and a (V, r) weight); hadamard's structured
  head uses its dense (V, n) matrix (same numbers).

Chosen by name only (``impl="tiled"``), where memory binds: ``auto`` does not pick it, since on an H200 it
took 2.2-5.4x plain's time in bfloat16 (``choose_tiled``); where ``tiled_unavailable`` finds a reason against
it, asking for it is refused with that reason in one line. On
the CPU it runs only under Triton's interpreter (``TRITON_INTERPRET=1``; the tests).
"""

from __future__ import annotations

import importlib.util
import os

import torch
from torch import Tensor

from embtie.errors import ConfigError
from embtie.sharing.factorized import fold_factor
from embtie.sharing.head import Head, compute_dtype
from embtie.sharing.tiled_ce_op import tiled_ce

TILED_DTYPES = (torch.float32, torch.bfloat16)
"""the compute dtypes the kernels are tested in."""



@torch.compiler.assume_constant_result
def _triton_installed() -> bool:
    """Whether triton can be imported (a constant to torch.compile, which traces the choice)."""
    return importlib.util.find_spec("triton") is not None


@torch.compiler.assume_constant_result
def _interpreter_on() -> bool:
    """Whether TRITON_INTERPRET=1 asks for Triton's interpreter (a constant to torch.compile)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def tiled_unavailable(head: Head, x: Tensor) -> str | None:
    """Why the tiled loss cannot run for ``head`` on x (N, d_t) here, in a few words; None when it can.
    (Every head can: the reasons are the device, the dtype and triton.)"""
    if x.device.type != "cuda" and not (x.device.type == "cpu" and _interpreter_on()):
        return f"it runs on CUDA (or the CPU under TRITON_INTERPRET=1), not on {x.device.type}"
    dtype = compute_dtype(x)
    if dtype not in TILED_DTYPES:
        return f"it computes in float32 or bfloat16, not {str(dtype).removeprefix('torch.')}"
    if not _triton_installed():
        return "triton is not installed (pip install 'embtie[gpu]')"
    return None


def choose_tiled(impl: str, head: Head, x: Tensor) -> str:
    """``impl`` checked for the tiled loss: "tiled" where it is asked for and can run, a ConfigError naming
    the reason where it is asked for and cannot; any other ``impl`` unchanged. ``auto`` never picks it: on
    an H200 it held the least memory of every method but took 2.2-5.4x plain's time in bfloat16 and 34-41x
    in float32 (BENCHMARKS-cuda.md, campaign step ``first``, 2026-11-28), so it is the choice by name where
    memory binds."""
    if impl != "tiled":
        return impl
    reason = tiled_unavailable(head, x)
    if reason is not None:
        raise ConfigError(f"loss impl='tiled' cannot run: {reason}")
    return "tiled"


def _row_scale(head: Head, vocab: int, like: Tensor) -> Tensor | None:
    """(V,) float32 per-row scale with every factor folded in (autograd), or None."""
    m = head.combined_row_scale()
    if m is None:
        return None
    if not isinstance(m, Tensor):
        m = torch.tensor(float(m), device=like.device)
    m = m.to(torch.float32)
    return m.expand(vocab).contiguous() if m.dim() == 0 else m


def tiled_cross_entropy(
    head: Head, x: Tensor, targets: Tensor, *, ignore_index: int = -100, label_smoothing: float = 0.0
) -> Tensor:
    """Mean (label-smoothed) cross-entropy of ``head`` on x (N, d_t) against targets (N,) over the tokens
    that are not ``ignore_index``, plus the head's z-loss: equal to ``plain_cross_entropy`` to float
    rounding, with gradients to x and every tensor the head was built from. Returns a 0-d float32."""
    head, x = fold_factor(head, x)
    dtype = compute_dtype(x)
    weight = head.weight
    bias = head.full_bias()
    shape = head.cap_form
    loss, _ = tiled_ce(
        x,
        weight,
        _row_scale(head, weight.shape[0], x),
        None if bias is None else bias.to(torch.float32),
        targets,
        str(dtype).removeprefix("torch."),
        ignore_index,
        float(label_smoothing),
        head.softcap,
        shape.form,
        shape.scale,
        float(shape.shift),
        float(head.z_loss),
    )
    return loss
