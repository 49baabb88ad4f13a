"""The id-range check of token ids and targets, and the same check as one opaque operator for
``torch.compile`` (``embtie::checked_ids``).

In eager mode ``embtie.sharing.inputs`` reads an id tensor's min and max on the host before any kernel
sees it. A tracer cannot read values, so while ``torch.compile`` traces, the ids go through this operator
instead: the compiler keeps it as one call (no graph break), and at run time it reads the range and raises
embtie's one-line ``DataError`` before the kernels that index with the ids (which would otherwise stop on
inductor's "index out of bounds" or a device assert). Its output, a copy of the ids (a few bytes per
token), is what the graph indexes with, so the call is never pruned as unused.
"""

from __future__ import annotations

import torch
from torch import Tensor

from embtie.errors import DataError

NO_IGNORE = -(2**62)
"""``ignore_index`` of token ids, which keep every position (an operator schema takes no ``int | None``
default here; no id is this negative)."""


def check_range(ids: Tensor, vocab_size: int, ignore_index: int = NO_IGNORE) -> None:
    """A DataError naming the first id outside [0, ``vocab_size``) (a host read of the min and max).

    ids: (...,) integers. Targets pass their ``ignore_index``: positions holding it are skipped, and the
    message says how to mark padding; token ids pass none."""
    kept = ids if ignore_index == NO_IGNORE else ids[ids != ignore_index]
    if kept.numel() == 0:
        return  # nothing to check (every target ignored: the loss's 0 / 0 = nan, as F.cross_entropy gives)
    lo, hi = int(kept.min()), int(kept.max())
    if lo >= 0 and hi < vocab_size:
        return
    bad = lo if lo < 0 else hi
    if ignore_index == NO_IGNORE:
        raise DataError(f"token id {bad} is outside the vocabulary [0, {vocab_size})")
    raise DataError(
        f"target id {bad} is outside the vocabulary [0, {vocab_size}); "
        f"fix the data or mark padding with ignore_index={ignore_index}"
    )


@torch.library.custom_op("embtie::checked_ids", mutates_args=())
def checked_ids(ids: Tensor, vocab_size: int, ignore_index: int) -> Tensor:
    """(...,) integer ids -> a copy of them, once ``check_range`` found every one in [0, ``vocab_size``)."""
    check_range(ids, vocab_size, ignore_index)
    return ids.clone()


@checked_ids.register_fake
def _(ids: Tensor, vocab_size: int, ignore_index: int) -> Tensor:
    return torch.empty_like(ids)
