"""Cross-entropy of a strategy's head against next tokens.

Two implementations give the same numbers (to float rounding) and the same gradients:
- ``plain``: materialise the N x V logits and call F.cross_entropy (the reference);
- ``chunked``: embtie.sharing.chunked_ce, which never holds the N x V logits or their gradient
  (``recompute``: the same, recomputing each chunk's logits in backward instead of forward);
- ``tiled``: embtie.sharing.tiled_ce, Triton kernels that hold neither the logits nor a chunk x V buffer
  (CUDA; the CPU only under Triton's interpreter).
``auto`` (the default) picks, as measured:
- on the CPU, ``chunked`` (in bench/ as fast as plain and several times leaner in memory), except for tiny
  problems (at most AUTO_PLAIN_MAX_LOGITS logits, where the chunk loop's fixed cost shows);
- on CUDA, ``plain`` up to AUTO_PLAIN_MAX_LOGITS_CUDA logits (fastest there: on an H200 chunked took 1.04-1.28x
  its time and tiled 2.2-5.4x in bfloat16, BENCHMARKS-cuda.md, campaign step ``first``), beyond it ``chunked``;
  ``tiled`` (the least memory) only by name.
Set ``embtie.sharing.loss.DEFAULT_IMPL`` to change the default.

Under ``torch.compile`` the plain loss is traced (the compiler fuses it), and the chunked ones run as
one opaque operator (``embtie::chunked_ce``, ``chunked_ce_op``): the eager chunk loop, whose reused
buffers, host-side token selection and hand-written backward a tracer cannot follow, runs inside it
unchanged, so a compiled step has no graph break and keeps the chunked loss's speed and memory; the
tiled loss is a custom operator already (``embtie::tiled_ce``). The
effective head (scales, norms, factor) is built around it with traced autograd. Structured heads
(hadamard's fast transform) trace the plain formula.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from embtie.errors import ConfigError
from embtie.sharing.chunked_ce import chunked_cross_entropy
from embtie.sharing.chunked_ce_op import traced_chunked_cross_entropy
from embtie.sharing.factorized import fold_factor
from embtie.sharing.head import Head, accumulation_dtype
from embtie.sharing.inputs import InputValueError, ranges_checked, traced_range_check
from embtie.sharing.inputs import check_targets as check_inputs_targets
from embtie.sharing.range_check_op import check_range
from embtie.sharing.tiled_ce import choose_tiled, tiled_cross_entropy

IMPLS = ("auto", "plain", "chunked", "recompute", "tiled")
DEFAULT_IMPL = "auto"
AUTO_PLAIN_MAX_LOGITS = 1 << 20
AUTO_PLAIN_MAX_LOGITS_CUDA = 1 << 31
"""on CUDA ``auto`` keeps the plain loss up to 2**31 logits: about 24 GiB of extra memory at the 12 bytes a
logit it took on an H200 (bfloat16 or float32), what a nanoGPT-style model at 32 x 1024 tokens of GPT-2's
vocabulary (1.65e9 logits) holds too; past it the chunked loss."""


def plain_cross_entropy(
    head: Head, x: Tensor, targets: Tensor, *, ignore_index: int = -100, label_smoothing: float = 0.0
) -> Tensor:
    """The reference: F.cross_entropy on the full (N, V) logits in at least float32 (float64 ones stay
    float64), plus the z-loss lambda * mean over kept tokens of logsumexp(z)^2 when ``head.z_loss``.
    x: (N, d_t); targets: (N,)."""
    logits = head.logits(x)
    logits = logits.to(accumulation_dtype(logits.dtype))
    ce = F.cross_entropy(logits, targets, ignore_index=ignore_index, label_smoothing=label_smoothing)
    if not head.z_loss:
        return ce
    keep = (targets != ignore_index).to(logits.dtype)
    log_z = torch.logsumexp(logits, dim=-1)
    return ce + head.z_loss * (log_z.square() @ keep) / keep.sum()


def auto_impl(logits: int, device: torch.device) -> str:
    """What ``auto`` runs for ``logits`` = N x V on ``device`` (module docstring): "plain" or "chunked"."""
    limit = AUTO_PLAIN_MAX_LOGITS_CUDA if device.type == "cuda" else AUTO_PLAIN_MAX_LOGITS
    return "plain" if logits <= limit else "chunked"


def check_targets(targets: Tensor, vocab_size: int, ignore_index: int) -> None:
    """A DataError naming the first target id outside [0, V) that is not ``ignore_index`` (a host sync)."""
    check_range(targets, vocab_size, ignore_index)


def cross_entropy(
    head: Head,
    x: Tensor,
    targets: Tensor,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    impl: str | None = None,
    chunk_size: int | None = None,
) -> Tensor:
    """Mean cross-entropy over tokens whose target is not ``ignore_index``.

    head: the strategy's output layer; x: (..., d_t) transformed hidden states; targets: (...,) long.
    Returns a scalar. With label smoothing eps the target distribution is (1-eps) one-hot + eps/V.
    Targets of another dtype, shape or device than ``x`` are a one-line error (``embtie.sharing.inputs``).
    ``impl``: one of IMPLS (None: DEFAULT_IMPL); ``chunk_size``: tokens per chunk for the chunked ones.
    """
    targets = check_inputs_targets(targets, x)
    if targets.numel() == 0:
        raise InputValueError(
            f"no tokens: hidden states {tuple(x.shape)} and targets {tuple(targets.shape)} are empty, "
            "and a mean over zero tokens is undefined"
        )
    impl = DEFAULT_IMPL if impl is None else impl
    if impl not in IMPLS:
        raise ConfigError(f"loss impl={impl!r} is unknown; choose one of: {', '.join(IMPLS)}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ConfigError(f"label_smoothing={label_smoothing!r} must be in [0, 1]")
    x2, t1 = x.reshape(-1, x.shape[-1]), targets.reshape(-1)
    t1 = traced_range_check(t1, head.vocab_size, ignore_index)  # compiled: embtie's line, not a kernel's assert
    if impl == "auto":
        impl = auto_impl(x2.shape[0] * head.vocab_size, x2.device)
    impl = choose_tiled(impl, head, x2)  # "tiled" refused in one line where it cannot run
    # traced: one opaque operator (module docstring)
    if torch.compiler.is_compiling() and impl not in ("plain", "tiled"):
        if head.structured is None:
            return traced_chunked_cross_entropy(
                head, x2, t1, ignore_index=ignore_index, label_smoothing=label_smoothing, chunk_size=chunk_size
            )
        impl = "plain"
    # free on the CPU (the chunked loss checks its own there); on a GPU only with the flag (a host sync),
    # else the kernel's own assert catches an id out of range
    if (impl in ("plain", "tiled") or t1.device.type != "cpu") and ranges_checked(t1):
        check_targets(t1, head.vocab_size, ignore_index)
    if impl == "tiled":
        return tiled_cross_entropy(head, x2, t1, ignore_index=ignore_index, label_smoothing=label_smoothing)
    if impl == "plain":
        return plain_cross_entropy(head, x2, t1, ignore_index=ignore_index, label_smoothing=label_smoothing)
    head, x2 = fold_factor(head, x2)  # factorized E = A B: the product stays V x r
    return chunked_cross_entropy(
        head,
        x2,
        t1,
        ignore_index=ignore_index,
        label_smoothing=label_smoothing,
        chunk_size=chunk_size,
        recompute=impl == "recompute",
    )
