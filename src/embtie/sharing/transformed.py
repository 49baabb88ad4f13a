"""Tied strategies that transform the hidden state before the tied output layer: z_i = e_i . f(h).

- tied-proj: a learned projection P with an L2 penalty on it (Press & Wolf's projection regularisation).
- tied-bert: an orthogonally initialised dense layer, optionally with bias, activation and norm
  (BERT's output transform; Su 2023's argument for why it removes the huge initial loss).
- tied-shuffle: a parameter-free permutation of the features of h (Su 2023).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.schema import Setting
from embtie.sharing.base import LogitMoments
from embtie.sharing.registry import register
from embtie.sharing.tied import Tied


@register
class TiedProj(Tied):
    """z_i = e_i . (P h) with P (d, d) learned; regularization() = proj_reg * ||P||_F^2 / (2 proj_reg_tokens).

    Press & Wolf's code adds ||P||^2 / (2 * 6.5 * B) to a loss summed over the T = 20 steps of each of
    the B = 20 sequences; on a per-token mean loss that is lambda * ||P||^2 / (2 * B * T) with
    lambda = 1/6.5 ~ 0.15. The defaults (proj_reg = 0.15, proj_reg_tokens = 400 = 20 x 20) give that
    strength; set proj_reg_tokens to your own tokens per batch to keep it per-sequence as they did.
    """

    name = "tied-proj"
    formula = "input e_i; logit z_i = e_i . (P h); loss += proj_reg ||P||^2 / (2 proj_reg_tokens)"
    source = "Press & Wolf 2016, projection regularisation (lambda = 0.15)"
    declared_options: ClassVar[dict[str, Setting]] = {
        "proj_reg": Setting("lambda of the penalty proj_reg ||P||^2 / (2 proj_reg_tokens) (Press & Wolf: 0.15)", ge=0),
        "proj_reg_tokens": Setting("tokens per batch the penalty is spread over (Press & Wolf: 20 x 20 = 400)", gt=0),
        "proj_bias": Setting("a learned bias in the projection P"),
        "proj_init": Setting("init of P: same (as E), orthogonal, or identity"),
    }

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        proj_reg: float = 0.15,
        proj_reg_tokens: float = 400.0,
        proj_bias: bool = False,
        proj_init: Literal["same", "orthogonal", "identity"] = "same",
        **options: Any,
    ) -> None:
        self.proj_reg = float(proj_reg)
        self.proj_reg_tokens = float(proj_reg_tokens)
        self.proj_init = proj_init
        super().__init__(vocab_size, dim, **options)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        proj = self.proj
        if self.proj_init == "same":
            self.init_(proj.weight)
        elif self.proj_init == "orthogonal":
            nn.init.orthogonal_(proj.weight)
        else:
            with torch.no_grad():
                proj.weight.copy_(torch.eye(self.dim))
        if proj.bias is not None:
            nn.init.zeros_(proj.bias)
        self._remember_init()

    def transform(self, h: Tensor) -> Tensor:
        return self.proj(h)

    def regularization(self) -> Tensor:
        return self.proj.weight.pow(2).sum() * (self.proj_reg / (2.0 * self.proj_reg_tokens))

    def _step0_moments(self) -> LogitMoments:
        if self.proj_init == "identity":
            return super()._step0_moments()
        d, s = self.dim, self.init_std
        ph2 = d if self.proj_init == "orthogonal" else d * d * s * s  # E ||P h||^2
        return LogitMoments(0.0, s * s * ph2, 0.0, s * s * ph2)


_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor] | None] = {
    "none": None,
    "gelu": F.gelu,
    "tanh": torch.tanh,
    "relu": F.relu,
}


def _second_moment(act: Callable[[Tensor], Tensor] | None) -> float:
    """E[act(x)^2] for x ~ N(0, 1), by quadrature."""
    if act is None:
        return 1.0
    x = torch.linspace(-12, 12, 48001, dtype=torch.float64)
    pdf = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return float((act(x) ** 2 * pdf).sum() * (x[1] - x[0]))


@register
class TiedBert(Tied):
    """z_i = e_i . f(h), f = dense layer with orthogonal init (+ optional bias, activation, norm)."""

    name = "tied-bert"
    formula = "input e_i; logit z_i = e_i . f(h), f = orthogonally initialised dense (+bias/act/norm)"
    source = "Su 2023; BERT's output transform"
    declared_options: ClassVar[dict[str, Setting]] = {
        "activation": Setting("the dense layer's activation"),
        "transform_bias": Setting("a learned bias in the dense layer"),
        "norm": Setting("a norm after the activation"),
    }

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        activation: Literal["none", "gelu", "tanh", "relu"] = "none",
        transform_bias: bool = False,
        norm: Literal["none", "layernorm", "rmsnorm"] = "none",
        **options: Any,
    ) -> None:
        self.activation = activation
        super().__init__(vocab_size, dim, **options)
        self.dense = nn.Linear(dim, dim, bias=transform_bias)
        self.norm: nn.LayerNorm | nn.RMSNorm | None = {
            "none": None,
            "layernorm": nn.LayerNorm(dim),
            "rmsnorm": nn.RMSNorm(dim),
        }[norm]
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        dense = self.dense
        nn.init.orthogonal_(dense.weight)
        if dense.bias is not None:
            nn.init.zeros_(dense.bias)
        if self.norm is not None:
            self.norm.reset_parameters()
        self._remember_init()

    def transform(self, h: Tensor) -> Tensor:
        x = self.dense(h)
        act = _ACTIVATIONS[self.activation]
        if act is not None:
            x = act(x)
        if self.norm is not None:
            x = self.norm(x)
        return x

    def _step0_moments(self) -> LogitMoments:
        # Orthogonal Q keeps ||Q h||^2 = d and decorrelates it from e_i (Johnson-Lindenstrauss);
        # an activation scales the second moment per coordinate; a norm restores ||f(h)||^2 = d.
        m2 = 1.0 if self.norm is not None else _second_moment(_ACTIVATIONS[self.activation])
        v = self.init_std**2 * self.dim * m2
        return LogitMoments(0.0, v, 0.0, v)


@register
class TiedShuffle(Tied):
    """z_i = e_i . S(h), S a fixed permutation of features: the two halves swapped (default), or
    ShuffleNet's channel shuffle with ``groups`` groups. Parameter-free."""

    name = "tied-shuffle"
    formula = "input e_i; logit z_i = e_i . S(h), S swaps the halves of h (or group shuffle)"
    source = "Su 2023 (parameter-free)"
    declared_options: ClassVar[dict[str, Setting]] = {
        "groups": Setting(
            "ShuffleNet's channel shuffle with this many groups (must divide the model width)",
            ge=2,
            null="swap the two halves of h",
        ),
    }

    def __init__(self, vocab_size: int, dim: int, *, groups: int | None = None, **options: Any) -> None:
        if groups is None:
            if dim % 2:
                raise ConfigError(f"tied-shuffle swaps the two halves of h, so dim={dim} must be even")
        elif dim % groups:
            raise ConfigError(f"option groups={groups!r} must be an integer >= 2 that divides dim={dim}")
        self.groups = groups
        super().__init__(vocab_size, dim, **options)

    def transform(self, h: Tensor) -> Tensor:
        if self.groups is None:
            half = self.dim // 2
            return torch.cat([h[..., half:], h[..., :half]], dim=-1)
        g = self.groups
        return h.unflatten(-1, (g, self.dim // g)).transpose(-1, -2).flatten(-2)

    def _step0_moments(self) -> LogitMoments:
        # z_i = sqrt(d)/||e_i|| sum_c e_c e_{pi(c)}: fixed points of pi add sigma each to the mean;
        # elements of 2-cycles appear twice in the sum, doubling their contribution to the variance.
        perm = self.transform(torch.arange(self.dim)).tolist()
        fixed = sum(1 for c, p in enumerate(perm) if c == p)
        two_cycle = sum(1 for c, p in enumerate(perm) if c != p and perm[p] == c)
        s, d = self.init_std, self.dim
        diag_var = s * s * (d - fixed + two_cycle) + (d * s * s / 2) * (fixed / d) ** 2
        return LogitMoments(fixed * s, diag_var, 0.0, d * s * s)
