"""Liu, Zhai & Chen's normalized shared embeddings: l2norm (eq. 19), sqnorm (eq. 22), distance
(eq. 26) and cosine (eq. 27-28). Each is a re-parametrisation of the one learned matrix E: the
normalization is recomputed every forward pass and gradients flow through it to E.

The per-row factors are kept as the head's row-norm power (``Head.norm_power``) (never a division of the N x V logits),
so these strategies cost what tied costs."""

from __future__ import annotations

from torch import Tensor

from embtie.sharing.base import LogitMoments, SharingStrategy
from embtie.sharing.registry import register
from embtie.sharing.tied import Tied


def _normalize_rows(rows: Tensor) -> Tensor:
    """(..., d) -> (..., d) rows divided by their L2 norm."""
    return rows / rows.norm(dim=-1, keepdim=True).clamp_min(1e-12)


@register
class L2Norm(Tied):
    """Both sides use the l2-normalized matrix: input e_i/||e_i||, logit z_i = (e_i/||e_i||) . h."""

    name = "l2norm"
    formula = "input e_i/||e_i||; logit z_i = (e_i/||e_i||) . h"
    source = "Liu, Zhai & Chen, eq. 19"
    zero_head_refusal = (
        "normalises the rows of E for its output layer: a zero row has no direction (its norm, 0, divides it)"
    )
    norm_power = -1.0

    def _input_rows(self, rows: Tensor) -> Tensor:
        return _normalize_rows(rows)

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return self.weight, None, None  # row scale 1/||e_i||: norm_power

    def _step0_moments(self) -> LogitMoments:
        # h = sqrt(d) e^_i: z_i = sqrt(d) exactly; z_k = sqrt(d) e^_k . e^_i has variance 1.
        return LogitMoments(self.dim**0.5, 0.0, 0.0, 1.0)


@register
class SqNorm(Tied):
    """Square-normalized output embedding: z_i = e_i . h / ||e_i||^2 (input side unchanged)."""

    name = "sqnorm"
    formula = "input e_i; logit z_i = e_i . h / ||e_i||^2"
    source = "Liu, Zhai & Chen, eq. 22"
    zero_head_refusal = (
        "normalises the rows of E for its output layer: a zero row has no direction (its norm, 0, divides it)"
    )
    norm_power = -2.0

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return self.weight, None, None  # row scale 1/||e_i||^2: norm_power

    def _step0_moments(self) -> LogitMoments:
        # z_i = sqrt(d) / ||e_i|| ~ 1/sigma; z_k = e_k . h / ||e_k||^2 has variance 1 / (d sigma^2).
        d, s = self.dim, self.init_std
        return LogitMoments(1.0 / s, 1.0 / (2 * d * s * s), 0.0, 1.0 / (d * s * s))


@register
class Distance(Tied):
    """Negative half squared distance: z_i = e_i . h - ||e_i||^2 / 2 (= -||h - e_i||^2 / 2 + const)."""

    name = "distance"
    formula = "input e_i; logit z_i = e_i . h - ||e_i||^2 / 2"
    source = "Liu, Zhai & Chen, eq. 26"
    sqnorm_bias = -0.5

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return self.weight, None, None  # bias -||e_i||^2 / 2: sqnorm_bias

    def _step0_moments(self) -> LogitMoments:
        d, s = self.dim, self.init_std
        return LogitMoments(
            diag_mean=d * s - 0.5 * d * s * s,
            diag_var=d * (1 - s) ** 2 * s * s / 2,
            off_mean=-0.5 * d * s * s,
            off_var=d * s * s + d * s**4 / 2,
        )


@register
class Cosine(Tied):
    """Cosine output layer: z_i = e_i . h / ||e_i|| = ||h|| cos(h, e_i) (input side unchanged)."""

    name = "cosine"
    formula = "input e_i; logit z_i = e_i . h / ||e_i||"
    source = "Liu, Zhai & Chen, eq. 27-28"
    zero_head_refusal = (
        "normalises the rows of E for its output layer: a zero row has no direction (its norm, 0, divides it)"
    )
    norm_power = -1.0

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return self.weight, None, None  # row scale 1/||e_i||: norm_power

    def _step0_moments(self) -> LogitMoments:
        return LogitMoments(self.dim**0.5, 0.0, 0.0, 1.0)


__all__ = ["Cosine", "Distance", "L2Norm", "SharingStrategy", "SqNorm"]
