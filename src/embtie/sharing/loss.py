"""Cross-entropy of a strategy's head against next tokens."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from embtie.sharing.head import Head


def cross_entropy(
    head: Head, x: Tensor, targets: Tensor, *, ignore_index: int = -100, label_smoothing: float = 0.0
) -> Tensor:
    """Mean cross-entropy over tokens whose target is not ``ignore_index``.

    head: the strategy's output layer; x: (..., d_t) transformed hidden states; targets: (...,) long.
    Returns a scalar. With label smoothing eps the target distribution is (1-eps) one-hot + eps/V.
    """
    if x.shape[:-1] != targets.shape:
        raise ValueError(f"hidden states {tuple(x.shape)} and targets {tuple(targets.shape)} do not match")
    logits = head.logits(x.reshape(-1, x.shape[-1]))
    return F.cross_entropy(
        logits.float(), targets.reshape(-1), ignore_index=ignore_index, label_smoothing=label_smoothing
    )
