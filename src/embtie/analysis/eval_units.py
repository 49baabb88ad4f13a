"""Per-unit evaluation losses (one unit = one evaluation batch, or one sentence batch for translation),
the test units of the perplexity bootstrap.

The task's own ``evaluate`` is run unchanged while the strategy's ``loss`` is wrapped to record, for
every call, the mean loss and the number of target tokens it covered. Summing loss x tokens over the
recorded units gives back exactly the token-weighted loss that ``evaluate`` reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from torch import Tensor, nn

from embtie.sharing.base import SharingStrategy


@contextmanager
def recording_loss(sharing_module: SharingStrategy, record: list[tuple[float, int]]) -> Iterator[None]:
    """While active, every ``sharing_module.loss(h, targets, ignore_index=...)`` appends (mean, tokens)."""
    original = sharing_module.loss

    def loss(h: Tensor, targets: Tensor, ignore_index: int = -100, **kw: Any) -> Tensor:
        value = original(h, targets, ignore_index=ignore_index, **kw)
        record.append((float(value.detach()), int((targets != ignore_index).sum())))
        return value

    sharing_module.loss = loss  # type: ignore[method-assign,assignment]  # an instance attribute, deleted below
    try:
        yield
    finally:
        del sharing_module.loss


def unit_losses(
    task: Any, model: nn.Module, split: str = "valid", path: str | Path | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """(units, 2) array of [summed token loss (nats), tokens] per evaluation unit, and the task's metrics."""
    record: list[tuple[float, int]] = []
    strategy = model.sharing
    if not isinstance(strategy, SharingStrategy):
        raise TypeError(f"model.sharing is a {type(strategy).__name__}, not a sharing strategy")
    with recording_loss(strategy, record):
        metrics = task.evaluate(model, split, path)
    stats = np.array([[m * n, n] for m, n in record if n > 0], dtype=np.float64).reshape(-1, 2)
    return stats, metrics
