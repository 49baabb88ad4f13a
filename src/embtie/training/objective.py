"""``Objective``: the model and its task's loss as one module, so that DDP sees the whole forward pass."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from embtie.tasks.base import Task


class Objective(nn.Module):
    """``forward(batch, carry) -> (objective, ce, tokens, carry)`` of ``task.loss(model, batch, carry)``."""

    def __init__(self, model: nn.Module, task: Task) -> None:
        super().__init__()
        self.model = model
        self.task = task

    def forward(self, batch: Any, carry: Any) -> tuple[torch.Tensor, torch.Tensor, int, Any]:
        out, carry = self.task.loss(self.model, batch, carry)
        return out.objective, out.ce, out.tokens, carry
