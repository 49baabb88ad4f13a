"""Input-gradient scaling for tied embeddings (Lopardo et al. 2026, arXiv 2603.26663).

A tied matrix drifts toward the output space because the output layer's gradient dominates it. This
strategy is ``tied`` in the forward pass, bit for bit; in backward the gradient reaching E through the
input path is multiplied by ``input_grad_scale``:

    dL/dE = input_grad_scale * (dL/dE through the input vectors) + (dL/dE through the logits).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor

from embtie.schema import Setting
from embtie.sharing.registry import register
from embtie.sharing.tied import Tied


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; backward multiplies the incoming gradient by ``factor``."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, factor: float) -> Tensor:
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        return grad * ctx.factor, None


def scale_grad(x: Tensor, factor: float) -> Tensor:
    """x (any shape) unchanged in forward; its gradient times ``factor`` in backward."""
    return x if factor == 1.0 else _ScaleGrad.apply(x, factor)


@register
class TiedGradScale(Tied):
    """Tied; the input path's gradient to E multiplied by ``input_grad_scale`` (forward unchanged)."""

    name = "tied-gradscale"
    formula = "tied (input e_i; logit z_i = e_i . h); dL/dE = k * dL/dE|input + dL/dE|output"
    source = "Lopardo et al. 2026, arXiv 2603.26663 (input-gradient scaling)"
    declared_options: ClassVar[dict[str, Setting]] = {
        "input_grad_scale": Setting("k: the gradient reaching E through the input path is multiplied by k", ge=0),
    }

    def __init__(self, vocab_size: int, dim: int, *, input_grad_scale: float = 2.0, **options: Any) -> None:
        self.input_grad_scale = float(input_grad_scale)
        super().__init__(vocab_size, dim, **options)

    def _input_rows(self, rows: Tensor) -> Tensor:
        return scale_grad(rows, self.input_grad_scale)
