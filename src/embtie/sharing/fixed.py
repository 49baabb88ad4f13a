"""Fixed classifiers: a randomly drawn (Shalev et al.) or Hadamard (Hoffer et al.) target matrix T that
is never trained. T is a buffer: no gradient, not in ``parameters()``, saved with the weights so that
a loaded model uses the very same T. The input embedding E is learned and separate."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import torch
from torch import Tensor, nn

from embtie.schema import Setting
from embtie.sharing import hadamard_transform
from embtie.sharing.base import LogitMoments, SharingStrategy
from embtie.sharing.head import Head
from embtie.sharing.registry import register


class FixedTargets(SharingStrategy):
    """z_i = t_i . g(h) with T (V, d_t) fixed; g = identity when d_t = d, else a learned d -> d_t map."""

    fixed_weight: Tensor
    """(V, d_t) T, a buffer: saved with the weights, never trained."""

    zero_head_refusal = "has a fixed (never trained) head T: a zero T would stay zero, and every logit with it"

    declared_options: ClassVar[dict[str, Setting]] = {
        "target_dim": Setting(
            "width d_t of the fixed targets T; a learned map g: d -> d_t when it differs from the model width",
            ge=1,
            null="the model width",
        ),
    }

    def __init__(self, vocab_size: int, dim: int, *, target_dim: int | None = None, **options: Any) -> None:
        super().__init__(vocab_size, dim, **options)
        if target_dim is None:
            target_dim = dim
        self._target_dim = target_dim
        self.proj = nn.Linear(dim, target_dim, bias=False) if target_dim != dim else None
        self.register_buffer("fixed_weight", self._draw_targets(vocab_size, target_dim))
        self.reset_parameters()

    def _draw_targets(self, vocab_size: int, target_dim: int) -> Tensor:
        raise NotImplementedError

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.proj is not None:
            self.proj.reset_parameters()
        self._remember_init()

    @property
    def target_dim(self) -> int:
        return self._target_dim

    def transform(self, h: Tensor) -> Tensor:
        return h if self.proj is None else self.proj(h)

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return self.fixed_weight, None, None

    def _step0_moments(self) -> LogitMoments:
        # x = g(h): identity gives E[x_c^2] = ||h||^2 / d = 1; nn.Linear's default init
        # U(-1/sqrt(d), 1/sqrt(d)) gives E[x_c^2] = 1/3. z_k = t_k . x has variance ||t_k||^2 E[x_c^2].
        x2 = 1.0 if self.proj is None else 1.0 / 3.0
        v = float(self.fixed_weight.float().pow(2).sum(-1).mean()) * x2
        return LogitMoments(0.0, v, 0.0, v)


@register
class Fixed(FixedTargets):
    """Shalev et al.: T drawn once at random (U[-r, r] per cell, r = 10, or N(0, 1)); rows optionally
    L2-normalized (their translation setting, the default here)."""

    name = "fixed"
    formula = "input e_i (learned); logit z_i = t_i . g(h), T fixed random"
    source = "Shalev, Shalev & Keshet (T ~ U[-10, 10], rows L2-normalized for translation)"
    declared_options: ClassVar[dict[str, Setting]] = {
        "target_init": Setting("how T is drawn: uniform U[-r, r] per cell, or normal N(0, 1)"),
        "target_range": Setting("r of the uniform draw U[-r, r]", gt=0),
        "normalize_rows": Setting("L2-normalize the rows of T (Shalev et al.'s translation setting)"),
    }

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        target_init: Literal["uniform", "normal"] = "uniform",
        target_range: float = 10.0,
        normalize_rows: bool = True,
        **options: Any,
    ) -> None:
        self.target_init = target_init
        self.target_range = float(target_range)
        self.normalize_rows = normalize_rows
        super().__init__(vocab_size, dim, **options)

    def _draw_targets(self, vocab_size: int, target_dim: int) -> Tensor:
        t = torch.empty(vocab_size, target_dim)
        if self.target_init == "uniform":
            t.uniform_(-self.target_range, self.target_range)
        else:
            t.normal_(0.0, 1.0)
        if self.normalize_rows:
            t = t / t.norm(dim=1, keepdim=True).clamp_min(1e-12)
        return t


def hadamard_entries(rows: Tensor, cols: Tensor) -> Tensor:
    """Entries H[i, j] = (-1)^popcount(i & j) of the Sylvester Hadamard matrix, for 1-D index tensors.

    Returns a (len(rows), len(cols)) tensor of +-1 in the default dtype (like every other strategy's
    tensors), without building the whole matrix.
    """
    x = rows.view(-1, 1) & cols.view(1, -1)
    parity = torch.zeros_like(x)
    while bool(x.any()):
        parity ^= x & 1
        x = x >> 1
    return 1.0 - 2.0 * parity.to(torch.get_default_dtype())


@register
class Hadamard(FixedTargets):
    """Hoffer et al.'s fixed classifier: rows of a +-1 Sylvester Hadamard matrix H_n (n = the power of
    two >= max(V, d_t)), scaled by 1/sqrt(d_t) to unit norm. With d_t = n all n columns are used
    (rows exactly orthogonal); with d_t < n a fixed random subset of d_t columns is used, because
    the first d_t columns alone repeat every d_t rows and would make tokens indistinguishable.
    With d_t = n (large) the logits are computed with a fast Walsh-Hadamard transform instead of the
    matmul (``uses_fast_transform``), O(n log n) per token instead of O(V n)."""

    name = "hadamard"
    formula = "input e_i (learned); logit z_i = t_i . g(h), T = rows of a +-1 Hadamard matrix / sqrt(d_t)"
    source = "Hoffer et al. 2018 'Fix your classifier' (cited by Shalev et al.)"

    def _draw_targets(self, vocab_size: int, target_dim: int) -> Tensor:
        n = 1 << max(vocab_size - 1, target_dim - 1, 1).bit_length()
        self.hadamard_order = n
        if target_dim == n:
            cols = torch.arange(n)
        else:
            gen = torch.Generator().manual_seed(0x5EED)
            cols = torch.randperm(n, generator=gen)[:target_dim].sort().values
        return hadamard_entries(torch.arange(vocab_size), cols) / math.sqrt(target_dim)

    def uses_fast_transform(self) -> bool:
        """True when the logits are computed with the fast Walsh-Hadamard transform: d_t = n (all
        columns of H_n, so T = H_n[:V] / sqrt(n)) and n >= hadamard_transform.FAST_MIN_ORDER, below
        which the dense matmul is as fast."""
        n = self.hadamard_order
        return self._target_dim == n and n >= hadamard_transform.FAST_MIN_ORDER

    def head(self) -> Head:
        """As the base head; with ``uses_fast_transform()`` it carries the O(n log n) transform, which
        computes the same logits as the (V, n) matrix in ``weight`` (kept for output_vectors())."""
        h = super().head()
        if self.uses_fast_transform():
            n = self.hadamard_order
            h.structured = hadamard_transform.HadamardRows(n, self.vocab_size, 1.0 / math.sqrt(n))
        return h
