"""Plain weight tying (Press & Wolf 2016), its log(V)/d initialisation (Su 2023), and no tying."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from embtie.sharing.base import InitStd, LogitMoments, SharingStrategy
from embtie.sharing.registry import register


@register
class Untied(SharingStrategy):
    """z_i = o_i . h + b_i with a separate learned output matrix O (V, d)."""

    name = "untied"
    formula = "input e_i; logit z_i = o_i . h (+ b_i), separate learned O"
    source = "Press & Wolf 2016 (untied); Shalev et al. (non-fixed)"
    zero_head_refusal = ""

    def __init__(self, vocab_size: int, dim: int, **options: Any) -> None:
        super().__init__(vocab_size, dim, **options)
        self.out_weight = nn.Parameter(self.weight.new_empty(vocab_size, dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.zero_head:  # every logit 0 at step 0: the loss is ln V (modded-nanogpt)
            nn.init.zeros_(self.out_weight)
        else:
            self.init_(self.out_weight)

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return self.out_weight, None, None

    def separate_output_weight(self) -> nn.Parameter | None:
        return self.out_weight

    def _step0_moments(self) -> LogitMoments:
        v = self.dim * self.init_std**2
        return LogitMoments(0.0, v, 0.0, v)


@register
class Tied(SharingStrategy):
    """z_i = e_i . h: the output matrix is the input embedding E itself."""

    name = "tied"
    formula = "input e_i; logit z_i = e_i . h"
    source = "Press & Wolf 2016; Liu et al. baseline (U = W, b = 0)"

    def __init__(self, vocab_size: int, dim: int, **options: Any) -> None:
        super().__init__(vocab_size, dim, **options)
        # Tied's own draw, not self.reset_parameters(): the tensors a subclass adds (tie-untie's O, a
        # projection) do not exist yet; the subclass's constructor draws everything once they do.
        Tied.reset_parameters(self)

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return self.weight, None, None

    def _step0_moments(self) -> LogitMoments:
        # h = e_i / sigma (RMSNorm), so z_i = ||e_i||^2 / sigma ~ d sigma; z_k = e_k . h ~ N(0, d sigma^2).
        d, s = self.dim, self.init_std
        # Var ||e_i|| ~ sigma^2 / 2 for Gaussian rows, so Var z_i ~ d sigma^2 / 2.
        return LogitMoments(diag_mean=d * s, diag_var=d * s * s / 2, off_mean=0.0, off_var=d * s * s)


@register
class TiedLogInit(Tied):
    """Tied, with E ~ N(0, sigma^2), sigma = ln(V)/d, so that e^{d sigma} = V (Su 2023)."""

    name = "tied-loginit"
    formula = "tied, E ~ N(0, (ln V / d)^2)"
    source = "Su 2023"

    def __init__(
        self, vocab_size: int, dim: int, *, init_std: float | InitStd | None = "log_v_over_d", **options: Any
    ) -> None:
        super().__init__(vocab_size, dim, init_std=init_std, **options)
