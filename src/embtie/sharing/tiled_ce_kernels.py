"""Triton kernels of the tiled cross-entropy (``embtie.sharing.tiled_ce``): forward and backward.

Both kernels take the canonical head's logits one (BLOCK_N, BLOCK_V) tile at a time,

    u = m_v (x_n . w_v) + b_v,     z = cap(u)     (cap: none, c tanh(u / c), or c sigmoid((u + shift) / s)),

accumulating x_n . w_v over BLOCK_D slices of the hidden width D. No tile leaves the chip: the forward keeps
an online log-sum-exp per row (running max and sum) plus the target's logit and the row's logit sum (label
smoothing); the backward recomputes each tile from the saved (N,) log-sum-exp, twice: one kernel owns a
row block and walks the vocabulary (dx (N, D)), the other owns a vocabulary tile and walks the rows
(dW (V, D), dm (V,), db (V,)), so every gradient is written by one program, without atomics, and the
same inputs give the same bits.

Loop bounds are compile-time constants (D; the tiles per vocabulary split, a power of two), so a model
compiles each kernel a few times at most, and Triton 3.6's interpreter (which cannot take a run-time loop
bound under NumPy 2.4) runs them.

Imported only when the tiled loss runs (it needs triton); under ``TRITON_INTERPRET=1`` the same code runs
on the CPU through Triton's interpreter (the tests).
"""

# mypy: disable-error-code="no-untyped-def"
# (Triton reads the kernels' parameter annotations: only tl.constexpr may be written there.)

from __future__ import annotations

import triton
import triton.language as tl

DOTS = {"float32": tl.float32, "bfloat16": tl.bfloat16}
"""the compute dtypes by torch's name, as the kernels' DOT constant."""

CAP_NONE = 0
CAP_TANH = 1
CAP_SIGMOID = 2


@triton.jit
def _operand(t, DOT: tl.constexpr, UPCAST: tl.constexpr):
    """A tile as tl.dot's operand: rounded to the compute dtype ``DOT`` (a float32 W under bfloat16 autocast
    is cast tile by tile, never copied whole), then widened to float32 where ``UPCAST`` (only under Triton's
    interpreter, whose dot multiplies bfloat16's raw bits; bfloat16 products are exact in float32, so the
    numbers are those of a tensor core accumulating in float32)."""
    t = t.to(DOT)
    if UPCAST:
        return t.to(tl.float32)
    else:
        return t


@triton.jit
def _tile_inner(
    x_ptr, w_ptr, rows, cols, row_ok, col_ok, stride_x, stride_w, D: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr,
    DOT: tl.constexpr, UPCAST: tl.constexpr,
):  # fmt: skip
    """(BLOCK_N, BLOCK_V) float32 x_n . w_v of one tile, over BLOCK_D slices of D."""
    acc = tl.zeros((BLOCK_N, BLOCK_V), dtype=tl.float32)
    for d0 in range(0, D, BLOCK_D):
        ds = d0 + tl.arange(0, BLOCK_D)
        d_ok = ds < D
        xb = tl.load(x_ptr + rows[:, None] * stride_x + ds[None, :], mask=row_ok[:, None] & d_ok[None, :], other=0.0)
        wb = tl.load(w_ptr + cols[:, None] * stride_w + ds[None, :], mask=col_ok[:, None] & d_ok[None, :], other=0.0)
        acc = tl.dot(_operand(xb, DOT, UPCAST), tl.trans(_operand(wb, DOT, UPCAST)), acc, input_precision=PRECISION)
    return acc


@triton.jit
def _capped(u, cap, cap_scale, cap_shift, CAP: tl.constexpr):
    """(z, dz/du) of the soft-cap on u (float32 tiles)."""
    if CAP == 1:
        a = tl.abs(u) / cap
        e = tl.exp(-2.0 * a)
        t = (1.0 - e) / (1.0 + e)
        t = tl.where(u < 0, -t, t)
        return cap * t, 1.0 - t * t
    elif CAP == 2:
        t = tl.sigmoid((u + cap_shift) / cap_scale)
        return cap * t, (cap / cap_scale) * t * (1.0 - t)
    else:
        return u, u * 0.0 + 1.0


@triton.jit
def tiled_ce_forward_kernel(
    x_ptr, w_ptr, m_ptr, b_ptr, t_ptr,
    max_ptr, sum_ptr, zt_ptr, zs_ptr,
    N, V, stride_x, stride_w,
    cap, cap_scale, cap_shift,
    D: tl.constexpr, TILES_PER_SPLIT: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_BIAS: tl.constexpr,
    CAP: tl.constexpr, PRECISION: tl.constexpr, DOT: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    """Per (row block, vocabulary split): the split's running max, sum of exp(z - max), target logit and
    logit sum of each row, written at [split, row] of the (S, N) float32 outputs.

    x (N, D), w (V, D) (row strides stride_x, stride_w; unit column stride), m (V,) float32 per-row scale,
    b (V,) float32 bias, t (N,) int64 targets (any id outside [0, V), e.g. ignore_index, matches no column)."""
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < N
    tgt = tl.load(t_ptr + rows, mask=row_ok, other=-1)
    run_max = tl.full((BLOCK_N,), float("-inf"), dtype=tl.float32)
    run_sum = tl.zeros((BLOCK_N,), dtype=tl.float32)
    z_tgt = tl.zeros((BLOCK_N,), dtype=tl.float32)
    z_sum = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for i in range(0, TILES_PER_SPLIT):
        cols = (split * TILES_PER_SPLIT + i) * BLOCK_V + tl.arange(0, BLOCK_V)
        col_ok = cols < V
        u = _tile_inner(
            x_ptr, w_ptr, rows, cols, row_ok, col_ok, stride_x, stride_w,
            D, BLOCK_N, BLOCK_V, BLOCK_D, PRECISION, DOT, UPCAST,
        )  # fmt: skip
        if HAS_SCALE:
            u = u * tl.load(m_ptr + cols, mask=col_ok, other=0.0)[None, :]
        if HAS_BIAS:
            u = u + tl.load(b_ptr + cols, mask=col_ok, other=0.0)[None, :]
        z, _ = _capped(u, cap, cap_scale, cap_shift, CAP)
        z = tl.where(col_ok[None, :], z, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(z, axis=1))
        safe = tl.where(new_max == float("-inf"), 0.0, new_max)  # a tile past V (never the first of a split)
        run_sum = run_sum * tl.exp(run_max - safe) + tl.sum(tl.exp(z - safe[:, None]), axis=1)
        run_max = new_max
        z_tgt += tl.sum(tl.where(cols[None, :] == tgt[:, None], z, 0.0), axis=1)
        z_sum += tl.sum(tl.where(col_ok[None, :], z, 0.0), axis=1)
    out = split * N + rows
    tl.store(max_ptr + out, run_max, mask=row_ok)
    tl.store(sum_ptr + out, run_sum, mask=row_ok)
    tl.store(zt_ptr + out, z_tgt, mask=row_ok)
    tl.store(zs_ptr + out, z_sum, mask=row_ok)


@triton.jit
def _tile_grad(
    x_ptr, w_ptr, m_ptr, b_ptr, rows, cols, row_ok, col_ok, tgt, lse, g, V, stride_x, stride_w,
    smooth, z_loss, cap, cap_scale, cap_shift,
    D: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_BIAS: tl.constexpr,
    CAP: tl.constexpr, PRECISION: tl.constexpr, DOT: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    """One tile recomputed: (dloss/du (BLOCK_N, BLOCK_V) float32, zero outside the tile's valid rows and
    columns; x_n . w_v (BLOCK_N, BLOCK_V); the per-row scale (BLOCK_V,), ones without one).

    lse (BLOCK_N,) the rows' log-sum-exp from the forward; g (BLOCK_N,) each row's weight in the loss
    (upstream gradient / kept tokens; 0 for an ignored token); ``smooth`` = eps, ``z_loss`` = lambda:
    dloss/dz_v = g (p_v (1 + 2 lambda lse) - (1 - eps) [v = t] - eps / V)."""
    acc = _tile_inner(
        x_ptr, w_ptr, rows, cols, row_ok, col_ok, stride_x, stride_w,
        D, BLOCK_N, BLOCK_V, BLOCK_D, PRECISION, DOT, UPCAST,
    )  # fmt: skip
    scale = tl.full((BLOCK_V,), 1.0, dtype=tl.float32)
    u = acc
    if HAS_SCALE:
        scale = tl.load(m_ptr + cols, mask=col_ok, other=0.0)
        u = acc * scale[None, :]
    if HAS_BIAS:
        u = u + tl.load(b_ptr + cols, mask=col_ok, other=0.0)[None, :]
    z, slope = _capped(u, cap, cap_scale, cap_shift, CAP)
    p = tl.exp(z - lse[:, None])
    dz = p * (1.0 + 2.0 * z_loss * lse)[:, None] - smooth / V
    dz = dz - tl.where(cols[None, :] == tgt[:, None], 1.0 - smooth, 0.0)
    du = tl.where(row_ok[:, None] & col_ok[None, :], dz * slope * g[:, None], 0.0)
    return du, acc, scale


@triton.jit
def tiled_ce_backward_x_kernel(
    x_ptr, w_ptr, m_ptr, b_ptr, t_ptr, lse_ptr, g_ptr, dx_ptr,
    N, V, stride_x, stride_w, v_tiles,
    smooth, z_loss, cap, cap_scale, cap_shift,
    D: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_BIAS: tl.constexpr,
    CAP: tl.constexpr, PRECISION: tl.constexpr, DOT: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    """dx (N, D) float32 (zeros on entry) of one row block, owned by this program: every vocabulary tile
    recomputed in turn and its du (m_v-scaled) @ W added in place, slice by slice of D (no atomics)."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < N
    tgt = tl.load(t_ptr + rows, mask=row_ok, other=-1)
    lse = tl.load(lse_ptr + rows, mask=row_ok, other=0.0)
    g = tl.load(g_ptr + rows, mask=row_ok, other=0.0)
    tile = 0
    while tile < v_tiles:  # a run-time bound in a while loop: no recompile per V (and the interpreter runs it)
        cols = tile * BLOCK_V + tl.arange(0, BLOCK_V)
        col_ok = cols < V
        du, _, scale = _tile_grad(
            x_ptr, w_ptr, m_ptr, b_ptr, rows, cols, row_ok, col_ok, tgt, lse, g, V, stride_x, stride_w,
            smooth, z_loss, cap, cap_scale, cap_shift,
            D, HAS_SCALE, HAS_BIAS, CAP, PRECISION, DOT, UPCAST, BLOCK_N, BLOCK_V, BLOCK_D,
        )  # fmt: skip
        dq = _operand(du * scale[None, :], DOT, UPCAST)
        for d0 in range(0, D, BLOCK_D):
            ds = d0 + tl.arange(0, BLOCK_D)
            d_ok = ds < D
            w_ok = col_ok[:, None] & d_ok[None, :]
            wb = tl.load(w_ptr + cols[:, None] * stride_w + ds[None, :], mask=w_ok, other=0.0)
            out = dx_ptr + rows[:, None] * D + ds[None, :]
            ok = row_ok[:, None] & d_ok[None, :]
            part = tl.dot(dq, _operand(wb, DOT, UPCAST), input_precision=PRECISION)
            tl.store(out, tl.load(out, mask=ok, other=0.0) + part, mask=ok)
        tl.debug_barrier()  # this tile's stores are seen by every thread of the program before the next loads
        tile += 1


@triton.jit
def tiled_ce_backward_w_kernel(
    x_ptr, w_ptr, m_ptr, b_ptr, t_ptr, lse_ptr, g_ptr, dw_ptr, dm_ptr, db_ptr,
    N, V, stride_x, stride_w, row_blocks,
    smooth, z_loss, cap, cap_scale, cap_shift,
    D: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_BIAS: tl.constexpr,
    CAP: tl.constexpr, PRECISION: tl.constexpr, DOT: tl.constexpr, UPCAST: tl.constexpr,
    NEED_DW: tl.constexpr, NEED_DM: tl.constexpr, NEED_DB: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    """dW (V, D) float32 (zeros on entry), dm (V,) and db (V,) of one vocabulary tile, owned by this
    program: every row block recomputed in turn, du^T @ x added in place slice by slice of D, dm and db
    summed in registers and stored once (no atomics)."""
    cols = tl.program_id(0) * BLOCK_V + tl.arange(0, BLOCK_V)
    col_ok = cols < V
    dm = tl.zeros((BLOCK_V,), dtype=tl.float32)
    db = tl.zeros((BLOCK_V,), dtype=tl.float32)
    block = 0
    while block < row_blocks:
        rows = block * BLOCK_N + tl.arange(0, BLOCK_N)
        row_ok = rows < N
        tgt = tl.load(t_ptr + rows, mask=row_ok, other=-1)
        lse = tl.load(lse_ptr + rows, mask=row_ok, other=0.0)
        g = tl.load(g_ptr + rows, mask=row_ok, other=0.0)
        du, acc, scale = _tile_grad(
            x_ptr, w_ptr, m_ptr, b_ptr, rows, cols, row_ok, col_ok, tgt, lse, g, V, stride_x, stride_w,
            smooth, z_loss, cap, cap_scale, cap_shift,
            D, HAS_SCALE, HAS_BIAS, CAP, PRECISION, DOT, UPCAST, BLOCK_N, BLOCK_V, BLOCK_D,
        )  # fmt: skip
        if NEED_DB:
            db += tl.sum(du, axis=0)
        if NEED_DM:
            dm += tl.sum(du * acc, axis=0)
        if NEED_DW:
            dq = _operand(du * scale[None, :], DOT, UPCAST)
            for d0 in range(0, D, BLOCK_D):
                ds = d0 + tl.arange(0, BLOCK_D)
                d_ok = ds < D
                x_ok = row_ok[:, None] & d_ok[None, :]
                xb = tl.load(x_ptr + rows[:, None] * stride_x + ds[None, :], mask=x_ok, other=0.0)
                out = dw_ptr + cols[:, None] * D + ds[None, :]
                ok = col_ok[:, None] & d_ok[None, :]
                part = tl.dot(tl.trans(dq), _operand(xb, DOT, UPCAST), input_precision=PRECISION)
                tl.store(out, tl.load(out, mask=ok, other=0.0) + part, mask=ok)
            tl.debug_barrier()
        block += 1
    if NEED_DB:
        tl.store(db_ptr + cols, db, mask=col_ok)
    if NEED_DM:
        tl.store(dm_ptr + cols, dm, mask=col_ok)
