"""nGPT's output layer (Loshchilov et al. 2024): unit-norm embeddings on both sides and a unit-norm
hidden state, with a learned per-token logit scale s."""

from __future__ import annotations

from typing import Any, ClassVar

from torch import Tensor, nn

from embtie.schema import Setting
from embtie.sharing.base import LogitMoments
from embtie.sharing.normalized import L2Norm
from embtie.sharing.registry import register


@register
class NGPT(L2Norm):
    """Input e_i/||e_i||; z_i = s_i (e_i/||e_i||) . (h/||h||).

    s is stored as nGPT does: a parameter initialised to 1/sqrt(d) and multiplied by
    scale_init * sqrt(d) in the forward pass, so its effective value starts at ``scale_init`` while
    the optimizer sees a parameter of the same magnitude as the others.
    """

    name = "ngpt"
    formula = "input e_i/||e_i||; logit z_i = s_i (e_i/||e_i||) . (h/||h||), s learned per token"
    source = "Loshchilov et al. 2024, nGPT"
    declared_options: ClassVar[dict[str, Setting]] = {
        "scale_init": Setting("the initial value of the per-token logit scale s", gt=0),
    }

    def __init__(self, vocab_size: int, dim: int, *, scale_init: float = 1.0, **options: Any) -> None:
        super().__init__(vocab_size, dim, **options)
        self.scale_init = float(scale_init)
        self.token_scale = nn.Parameter(self.weight.new_full((vocab_size,), dim**-0.5))

    def reset_parameters(self) -> None:
        super().reset_parameters()
        nn.init.constant_(self.token_scale, self.dim**-0.5)

    def effective_token_scale(self) -> Tensor:
        """(V,) the per-token logit scale s."""
        return self.token_scale * (self.scale_init * self.dim**0.5)

    def transform(self, h: Tensor) -> Tensor:
        return h / h.norm(dim=-1, keepdim=True).clamp_min(1e-12)

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return self.weight, self.effective_token_scale(), None  # times 1/||e_i|| (norm_power = -1)

    def _step0_moments(self) -> LogitMoments:
        s = self.scale_init
        return LogitMoments(s, 0.0, 0.0, s * s / self.dim)
