"""Settings of one chunked cross-entropy call (``_Config``) and the default chunk size per device.

Part of the memory-lean loss (``embtie.sharing.chunked_ce``, whose docstring gives the formulas);
imported by every other ``chunked_ce_*`` module and importing none of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from embtie.sharing.head import StructuredWeight, accumulation_dtype
from embtie.sharing.softcap import CapShape

CHUNK_ELEMENTS = 1 << 24
"""Default chunk budget in logits on the CPU: chunk = max(16, CHUNK_ELEMENTS // V) tokens (64 MiB of
float32 logits; measured in bench/: smaller chunks stay in cache, larger ones gain nothing)."""

CPU_MAX_CHUNK = 1024
"""and at most this many tokens: at small V a 64 MiB chunk is thousands of tokens whose (chunk, d)
buffers outweigh the logits (V=4096, d=1024, 8192 tokens: 188 MiB extra at 4096-token chunks vs 92 MiB
at 1024, same time within noise; bench/lce_anchor.py)."""

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
    cap_shape: CapShape  # the soft-cap's form (tanh, or sigmoid with scale and shift); no default (Dynamo)
    norm_power: float | None = None
    sync_free: bool | None = None  # embtie.sharing.chunked_ce.SYNC_FREE when the call began
    z_loss: float = 0.0  # lambda of the z-loss lambda * log^2 Z per kept token (PaLM)

    @property
    def acc_dtype(self) -> torch.dtype:
        """The dtype of everything but the matmuls (softmax, loss, accumulated gradients): float32 for
        float32, bfloat16 and float16 compute dtypes, float64 for float64 (``accumulation_dtype``)."""
        return accumulation_dtype(self.compute_dtype)


def _matrix(w: Tensor | None) -> Tensor:
    """The head's (V, d_t) matrix ``w``, on the paths where the head is not structured (only a structured
    head, ``_Config.structured``, has none)."""
    assert w is not None, "a head without a structured weight has a matrix"
    return w


def default_chunk(vocab_size: int, device_type: str = "cpu") -> int:
    """Tokens per chunk for a vocabulary of ``vocab_size`` on a device of type ``device_type``."""
    if device_type == "cuda":
        return max(CUDA_MIN_CHUNK, CUDA_CHUNK_ELEMENTS // vocab_size)
    return min(CPU_MAX_CHUNK, max(16, CHUNK_ELEMENTS // vocab_size))
