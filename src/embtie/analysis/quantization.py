"""Fake quantization of a vocabulary table: quantize to a signed integer grid, then dequantize.

The rule (``fake_quantize``), the same for every format: **symmetric, per row, absmax scale**. For each
row w_i (d,) of a (V, d) matrix, with q = 2^(bits-1) - 1 integer levels on each side of zero
(int8: q = 127, int4: q = 7),

    s_i = max_j |w_ij| / q,      k_ij = clamp(round(w_ij / s_i), -q, q),      w'_ij = k_ij * s_i,

computed in float32 and returned in the matrix's dtype; ``round`` rounds half to even (``torch.round``),
and a row of zeros (s_i = 0) stays zeros. Zero is on the grid, the grid is symmetric (-128 and -8 are
not used), and there is no zero point: what a deployment stores is the integers k and one scale per row.
A matrix whose rows are already on such a grid (every entry a multiple of s_i, one entry of each row at
+-q s_i) comes back unchanged: the format is lossless for it.
"""

from __future__ import annotations

import torch
from torch import Tensor

from embtie.errors import ConfigError

FORMATS: dict[str, int] = {"int8": 8, "int4": 4}
"""format name -> bits per entry (signed integers)."""


def levels(fmt: str) -> int:
    """q, the largest integer of the symmetric grid of ``fmt`` (int8: 127, int4: 7)."""
    return 2 ** (FORMATS[fmt] - 1) - 1


def fake_quantize(weight: Tensor, fmt: str) -> Tensor:
    """(V, d) -> (V, d): every row quantized to the symmetric ``fmt`` grid with its own absmax scale and
    dequantized (the module docstring's rule); a new tensor, ``weight`` is left as it is."""
    if fmt not in FORMATS:
        raise ConfigError(f"quantization format {fmt!r} is not one of {', '.join(FORMATS)}")
    q = levels(fmt)
    w = weight.detach().float()
    scale = w.abs().amax(dim=-1, keepdim=True) / q  # (V, 1)
    divisor = torch.where(scale > 0, scale, torch.ones_like(scale))  # a zero row: 0 / 1 = 0
    k = torch.clamp(torch.round(w / divisor), -q, q)
    return (k * scale).to(weight.dtype)


def parse_formats(text: str) -> tuple[str, ...]:
    """``"int8,int4"`` -> ("int8", "int4"), in the order given, each once; an unknown or empty item is a
    ConfigError naming the formats there are."""
    items = [t.strip() for t in text.split(",")]
    bad = [t for t in items if t not in FORMATS]
    if bad or not items:
        shown = ", ".join(repr(t) for t in bad) or repr(text)
        raise ConfigError(
            f"--quantize {shown}: no such format; choose from {', '.join(FORMATS)} (e.g. --quantize int8,int4)"
        )
    return tuple(dict.fromkeys(items))
