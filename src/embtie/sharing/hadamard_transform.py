"""Fast Walsh-Hadamard transform, and the `hadamard` head's logits computed with it.

The Sylvester Hadamard matrix H_n, H[i, j] = (-1)^popcount(i & j), factors as a Kronecker product
H_n = H_a (x) H_b for n = a * b. So x @ H_n on a (M, n) input is two (or more) matmuls with small
dense Hadamard factors on the reshaped (M, a, b) input: O(M n (a + b)) instead of O(M n^2) for the
dense product, and the factor matmuls run at matmul speed (a butterfly of log2(n) elementwise passes
is several times slower on CPU). Everything is plain torch ops, so autograd and autocast work.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

MAX_FACTOR = 256
"""Largest dense Hadamard factor; n is split into factors of at most this size."""

FAST_MIN_ORDER = 512
"""Below this order the dense matmul against the (V, n) matrix is as fast; the fast path is not used."""

_FACTOR_CACHE: dict[tuple[int, torch.dtype, torch.device], Tensor] = {}


def sylvester(n: int, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
    """(n, n) the +-1 Sylvester Hadamard matrix, n a power of two (small ones cached per dtype and device)."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"Hadamard order {n} must be a power of two")
    key = (n, dtype, torch.device(device))
    h = _FACTOR_CACHE.get(key)
    if h is None:
        h = torch.ones(1, 1, dtype=dtype, device=device)
        while h.shape[0] < n:  # H_2m = [[H_m, H_m], [H_m, -H_m]]
            h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
        if n <= MAX_FACTOR:
            _FACTOR_CACHE[key] = h
    return h


def _factors(n: int) -> list[int]:
    """Split a power of two n into as few, as balanced power-of-two factors <= MAX_FACTOR as possible."""
    bits = n.bit_length() - 1
    parts = max(1, math.ceil(bits / (MAX_FACTOR.bit_length() - 1)))
    sizes = [bits // parts + (1 if k < bits % parts else 0) for k in range(parts)]
    return [1 << s for s in sizes]


def fwht(x: Tensor) -> Tensor:
    """(..., n) -> (..., n): x @ H_n (unnormalized; H_n is symmetric, so this is also H_n @ x per row)."""
    n = x.shape[-1]
    lead = x.shape[:-1]
    m = math.prod(lead)
    factors = _factors(n)
    dtype = torch.get_autocast_dtype(x.device.type) if torch.is_autocast_enabled(x.device.type) else x.dtype
    y = x.reshape(m, n)
    post = n
    pre = 1
    for k in factors:
        post //= k
        h = sylvester(k, dtype=dtype, device=x.device)
        if post == 1:
            y = (y.reshape(m * pre, k) @ h).reshape(m, n)
        else:
            y = torch.matmul(h, y.reshape(m * pre, k, post)).reshape(m, n)
        pre *= k
    return y.reshape(*lead, n)


class HadamardRows:
    """The linear map x -> x @ T^T with T = scale * H_n[:V] (the first V rows of H_n), via ``fwht``.

    Stands in for the (V, n) matrix in ``Head`` (field ``structured``): same numbers, O(n log n)
    per token instead of O(V n).
    """

    def __init__(self, order: int, vocab_size: int, scale: float) -> None:
        if vocab_size > order:
            raise ValueError(f"vocab_size={vocab_size} exceeds the Hadamard order {order}")
        self.order = order
        self.vocab_size = vocab_size
        self.scale = scale

    def __call__(self, x: Tensor) -> Tensor:
        """(..., n) -> (..., V)."""
        return fwht(x)[..., : self.vocab_size] * self.scale

    def transpose(self, dz: Tensor) -> Tensor:
        """(..., V) -> (..., n): dz @ T, the gradient of ``__call__`` w.r.t. x."""
        pad = self.order - self.vocab_size
        if pad:
            dz = torch.nn.functional.pad(dz, (0, pad))
        return fwht(dz) * self.scale

    def dense(self) -> Tensor:
        """(V, n) the matrix T itself (for checks)."""
        return sylvester(self.order)[: self.vocab_size] * self.scale
