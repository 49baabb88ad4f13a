"""The checks at the boundary of a strategy's Python API (``embed``, ``logits``, ``loss``): one-line
errors for inputs of the wrong kind, shape or device, raised before any kernel sees them.

They cost a few attribute reads per call (no host sync): the dtype, shape and device of each input, all
static under ``torch.compile`` (traced as guards, not as graph breaks). Id ranges are checked on the CPU,
where a min/max is cheap; on a GPU that check needs a host sync, so it
runs only when ``CHECK_RANGES_ON_DEVICE`` is set (``EMBTIE_CHECK_RANGES=1`` in the environment, or the
module attribute) — otherwise the device's own kernel asserts on an id out of range. Under
``torch.compile`` the same check runs as an opaque operator in the graph (``range_check_op``), so a
compiled model reports an id out of range with the same line as an eager one.
"""

from __future__ import annotations

import os

import torch
from torch import Tensor

from embtie.errors import EmbtieError
from embtie.sharing.range_check_op import NO_IGNORE, check_range, checked_ids

CHECK_RANGES_ON_DEVICE = os.environ.get("EMBTIE_CHECK_RANGES", "") == "1"
"""check the range of token ids and targets on accelerators too (one host sync per call)."""


class InputTypeError(EmbtieError, TypeError):
    """An input of the wrong type or dtype (float token ids, integer hidden states, a list)."""


class InputValueError(EmbtieError, ValueError):
    """An input of the wrong shape or on the wrong device."""


def _tensor(x: object, what: str, kind: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise InputTypeError(f"{what} must be a torch.Tensor of {kind}, not {type(x).__name__}")
    return x


def _same_device(x: Tensor, device: torch.device, what: str, other: str) -> None:
    if x.device != device:
        raise InputValueError(
            f"{what} are on {x.device} but {other} on {device}; move them there first (.to({str(device)!r}))"
        )


def ranges_checked(x: Tensor) -> bool:
    """Whether the id range of ``x`` is checked here, on the host: on the CPU always, elsewhere with the flag,
    and never while ``torch.compile`` traces (a min/max read on the host would break the graph;
    ``traced_range_check`` puts the check in the graph instead)."""
    if torch.compiler.is_compiling():
        return False
    return x.device.type == "cpu" or CHECK_RANGES_ON_DEVICE


def traced_range_check(ids: Tensor, vocab_size: int, ignore_index: int = NO_IGNORE) -> Tensor:
    """While ``torch.compile`` traces, where eager mode checks the range (the CPU, or the flag): ``ids``
    (...,) through the ``embtie::checked_ids`` operator, which raises embtie's line at run time for an id
    outside [0, V) (targets: other than ``ignore_index``); otherwise ``ids`` itself."""
    if torch.compiler.is_compiling() and (ids.device.type == "cpu" or CHECK_RANGES_ON_DEVICE):
        return checked_ids(ids, vocab_size, ignore_index)
    return ids


def check_ids(ids: object, vocab_size: int, device: torch.device) -> Tensor:
    """Token ids for ``embed``: an integer tensor on ``device`` (the strategy's), each in [0, V); returns
    them (under ``torch.compile``: through the range-check operator, ``traced_range_check``)."""
    t = _tensor(ids, "token ids", "integers (torch.long)")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise InputTypeError(f"token ids must be integers (torch.long), not {t.dtype}")
    _same_device(t, device, "token ids", "the strategy's weights are")
    if ranges_checked(t):
        check_range(t, vocab_size)
    return traced_range_check(t, vocab_size)


def check_hidden(h: object, dim: int, device: torch.device, dtype: torch.dtype | None = None) -> Tensor:
    """Hidden states for ``logits``/``loss``: a floating tensor (..., dim) on ``device`` (the strategy's), of
    the weights' ``dtype`` unless autocast is on for that device (where torch casts both itself)."""
    t = _tensor(h, "hidden states", "floating-point numbers")
    if not t.is_floating_point():
        raise InputTypeError(f"hidden states must be floating point (e.g. torch.float32), not {t.dtype}")
    if t.dim() == 0 or t.shape[-1] != dim:
        raise InputValueError(f"hidden states {tuple(t.shape)} must end in the strategy's dim={dim}")
    _same_device(t, device, "hidden states", "the strategy's weights are")
    if dtype is not None and t.dtype != dtype and not torch.is_autocast_enabled(t.device.type):
        raise InputTypeError(
            f"hidden states are {t.dtype} but the strategy's weights are {dtype}; cast one to the other "
            f"(h.to({dtype}) or strategy.to({t.dtype})), or call it under torch.autocast({t.device.type!r})"
        )
    return t


def check_targets(targets: object, x: Tensor) -> Tensor:
    """Targets for ``loss``: an integer tensor with the leading shape of ``x`` (..., d), on its device."""
    t = _tensor(targets, "targets", "integer token ids")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise InputTypeError(f"targets must be integer token ids (torch.long), not {t.dtype}")
    if x.shape[:-1] != t.shape:
        raise InputValueError(f"hidden states {tuple(x.shape)} and targets {tuple(t.shape)} do not match")
    _same_device(t, x.device, "targets", "the hidden states are")
    return t
