"""``Objective``: the model and its task's loss as one module, so that DDP (and ``torch.compile``) sees the
whole forward pass.

Its forward returns the objective and the logged cross-entropy stacked in ONE fresh tensor (2,), split by
``split`` outside the module. Returned apart, they would be two outputs of a compiled graph that inductor
may store in one buffer: a task's objective is ``ce + regularization()``, the regulariser of most
strategies is a constant zero, and inductor's no-op removal (``x + 0 -> x``) makes the objective the very
tensor the task also returns detached (``ce.detach()``, for the log). AOTAutograd then marks that one
tensor non-differentiable for the detached output, and the objective comes back without a ``grad_fn``
("element 0 of tensors does not require grad" at the first backward; torch 2.13, CPU). A stack is a new
buffer whatever the graph simplifies, so no output of the region aliases another.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from embtie.tasks.base import Task


class Objective(nn.Module):
    """``forward(batch, carry) -> (losses, tokens, carry)`` of ``task.loss(model, batch, carry)``:
    ``losses`` (2,) is (objective, ce), which ``split`` takes apart."""

    def __init__(self, model: nn.Module, task: Task) -> None:
        super().__init__()
        self.model = model
        self.task = task

    def forward(self, batch: Any, carry: Any) -> tuple[torch.Tensor, int, Any]:
        out, carry = self.task.loss(self.model, batch, carry)
        return torch.stack((out.objective, out.ce.to(out.objective.dtype))), out.tokens, carry


def split(losses: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(2,) ``Objective``'s stacked losses -> (objective (0-d, to backpropagate), ce (0-d, detached))."""
    return losses[0], losses[1].detach()
