"""What every language model offers the ``lm`` task, whatever its architecture.

A language model is built as ``Model(config, sharing)`` and reads its input through
``sharing.embed``; the task computes the loss with ``sharing.loss(h, targets)``, never the model.

- ``stateful = False`` (a Transformer): ``forward(ids (B, T)) -> h (B, T, d)``; every window is read
  on its own, so the training windows may be visited in any order (``data.shuffle``).
- ``stateful = True`` (an LSTM): ``forward(ids, state) -> (h, state)``; the state is carried from one
  window to the next (truncated BPTT), starting from ``init_state(batch_size, device)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from embtie.sharing.base import SharingStrategy


class LanguageModel(nn.Module):
    """Base of the language models: the sharing object and the state the task carries between windows."""

    stateful: ClassVar[bool] = False
    """forward takes and returns a state carried from one window to the next."""

    reads_task_vocabulary: ClassVar[bool] = False
    """the constructor also takes ``vocabulary`` (the task's tokens in id order) and ``sharing_options`` (the
    options its sharing object was built with): a pretrained model matches its token rows to them."""

    sharing: SharingStrategy

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> Any:
        """The state before the first window of ``batch_size`` streams (None for stateless models)."""
        return None
