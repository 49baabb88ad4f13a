"""Logit soft-caps: the tanh cap of Gemma 2 and the sigmoid cap of modded-nanogpt.

    tanh:     z <- c tanh(u / c)                    values in (-c, c), slope 1 at u = 0
    sigmoid:  z <- c sigmoid((u + b) / s)           values in (0, c), slope c / (4 s) at u = -b

(``c``: option ``softcap``; ``s``: ``softcap_scale``, by default c / 4, so that the slope is 1 at u = -b;
``b``: ``softcap_shift``.) modded-nanogpt's ``30 * sigmoid(logits / 7.5)`` is c = 30, s = 7.5, b = 0.

Since sigmoid(v) = (1 + tanh(v / 2)) / 2, a sigmoid cap is a tanh cap of half the height on a scaled and
shifted input, plus the constant c / 2: c sigmoid((u + b) / s) = c/2 + (c/2) tanh((u + b) / (2 s)). The
softmax ignores the constant, so with b = 0 and s = c / 4 the sigmoid cap gives exactly the probabilities
of the tanh cap c / 2 (``tests/sharing/test_softcap.py`` checks it); a shift b makes it a different
function (the cap is centred at u = -b), and the z-loss sees the constant (log Z grows by c / 2).

The memory-lean loss applies a cap in place on a chunk's logits (``inner_``, then ``times c``) and needs
the cap's derivative from the kept inner values alone (``slope_``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

SoftcapForm = Literal["tanh", "sigmoid"]
"""the values of option ``softcap_form``."""


@dataclass(frozen=True)
class CapShape:
    """The shape of a cap of height c: ``form``, and for sigmoid its input scale s and shift b."""

    form: SoftcapForm = "tanh"
    scale: float | None = None
    """s of the sigmoid cap; None: c / 4."""
    shift: float = 0.0
    """b of the sigmoid cap."""

    def sigmoid_scale(self, cap: float) -> float:
        return cap / 4.0 if self.scale is None else self.scale

    def inner_(self, u: Tensor, cap: float) -> Tensor:
        """In place: u -> t, the cap's inner value (tanh(u / c), or sigmoid((u + b) / s)); the capped
        logit is c t."""
        if self.form == "tanh":
            return u.div_(cap).tanh_()
        if self.shift:
            u.add_(self.shift)
        return u.div_(self.sigmoid_scale(cap)).sigmoid_()

    def slope_(self, t: Tensor, cap: float) -> Tensor:
        """In place: the inner value t -> dz/du, the cap's derivative (1 - t^2, or (c / s) t (1 - t))."""
        if self.form == "tanh":
            return t.square_().neg_().add_(1.0)
        return t.sub_(t.square()).mul_(cap / self.sigmoid_scale(cap))

    def apply(self, z: Tensor, cap: float) -> Tensor:
        """z -> the capped logits (autograd; not in place)."""
        if self.form == "tanh":
            return torch.tanh(z / cap) * cap
        return torch.sigmoid((z + self.shift) / self.sigmoid_scale(cap)) * cap


TANH = CapShape()
"""the default shape: Gemma 2's tanh cap."""


def apply_softcap(z: Tensor, cap: float | None, shape: CapShape | None = None) -> Tensor:
    """The capped logits (``shape``: tanh when None); identity when cap is None."""
    if cap is None:
        return z
    return (TANH if shape is None else shape).apply(z, cap)
