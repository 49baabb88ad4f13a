"""Tie, then untie (modded-nanogpt record PR #178: the LM head untied from the embedding 2/3 of the way
through training).

Until step ``untie_at * total_steps`` the strategy is ``tied`` (z_i = e_i . h). At that step the
trainer's per-step hook (``on_train_step``) copies E into the output matrix O and copies E's optimizer
state (Adam's exp_avg, exp_avg_sq and step; SGD's momentum) to O, so that O continues E's trajectory;
from then on the strategy is ``untied`` (input e_i, z_i = o_i . h), both matrices learning separately.

O exists from the start (so the optimizer and checkpoints hold it throughout) and gets no gradient
while tied. Whether the switch happened is the 0-d buffer ``untied`` (saved with the weights), so a
run resumed after the switch, and a model loaded for evaluation, use O.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from embtie.schema import Setting
from embtie.sharing.registry import register
from embtie.sharing.tied import Tied


@register
class TieUntie(Tied):
    """Tied until ``untie_at`` of training, then untied with O <- E and E's optimizer state copied."""

    name = "tie-untie"
    formula = "tied (z_i = e_i . h) until step untie_at*total; then O <- E (and its optimizer moments), z_i = o_i . h"
    source = "modded-nanogpt record PR #178 (untie the LM head 2/3 through training)"

    untied: Tensor
    """0-d buffer, 1 once the matrices are untied (saved with the weights)."""

    zero_head_refusal = (
        "is tied until the untie step, where O <- E replaces O's initial values: a zero O would never be used"
    )

    declared_options: ClassVar[dict[str, Setting]] = {
        "untie_at": Setting("the fraction of training after which O <- E and the matrices learn apart", ge=0, le=1),
    }

    def __init__(self, vocab_size: int, dim: int, *, untie_at: float = 2.0 / 3.0, **options: Any) -> None:
        self.untie_at = float(untie_at)
        super().__init__(vocab_size, dim, **options)
        self.out_weight = nn.Parameter(torch.empty(vocab_size, dim))
        self.register_buffer("untied", torch.zeros(()))
        self._is_untied = False  # mirrors the buffer without a host sync per forward
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        self.init_(self.out_weight)

    def separate_output_weight(self) -> nn.Parameter | None:
        return self.out_weight

    @property
    def is_untied(self) -> bool:
        return self._is_untied

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return (self.out_weight if self._is_untied else self.weight), None, None

    def untie_step(self, total_steps: int) -> int:
        """The step at whose start the matrices are untied: round(untie_at * total_steps)."""
        return round(self.untie_at * total_steps)

    def on_train_step(self, step: int, total_steps: int, optimizer: torch.optim.Optimizer | None = None) -> None:
        """Called before every optimizer step ``step`` (0-based) of ``total_steps``: unties at ``untie_step``."""
        super().on_train_step(step, total_steps, optimizer)
        if not self._is_untied and step >= self.untie_step(total_steps):
            self.untie(optimizer)

    @torch.no_grad()
    def untie(self, optimizer: torch.optim.Optimizer | None = None) -> None:
        """O <- E; E's optimizer state copied to O (unless E is factorized: O's state then starts empty)."""
        self.out_weight.copy_(self.embedding_matrix())
        if optimizer is not None:
            optimizer.state.pop(self.out_weight, None)
            state = optimizer.state.get(self.weight)
            if state and self.factor_b is None:
                optimizer.state[self.out_weight] = {
                    k: v.clone() if isinstance(v, Tensor) else v for k, v in state.items()
                }
        self.untied.fill_(1.0)
        self._is_untied = True

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._is_untied = bool(self.untied)

    def parameter_counts(self) -> dict[str, int]:
        """As the base, without the 0-d phase flag (not a fixed table)."""
        counts = super().parameter_counts()
        counts["fixed"] -= self.untied.numel()
        return counts
