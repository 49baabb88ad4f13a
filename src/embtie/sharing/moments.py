"""The optimizer state of one parameter, wherever the optimizer keeps it: tie-untie's switch copies E's
moments to O, and its re-tie may average them (``embtie.sharing.tie_untie``).

A plain ``torch.optim`` optimizer (or a wrapper exposing its ``state``, as accelerate's does) keeps
``optimizer.state[p]`` for every parameter in this process; FSDP2's DTensor parameters keep each rank's
shard there too, E's and O's rows aligned, so a local copy is the copy. torch's
``ZeroRedundancyOptimizer`` is different: each parameter's state lives in the local optimizer
(``optimizer.optim``) of the one rank that owns it, and its own ``state`` stays empty until a
``consolidate_state_dict``: read there, E would seem never stepped and its moments would be lost. Here a
ZeRO parameter's state is read on its owner and broadcast over the optimizer's process group (every rank
calls the strategy's step hook at the same step, so the collective is matched), and written only on the
rank that owns the target. FSDP1's flat parameters are refused before any switch
(``step_call.check_optimizer``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

State = dict[str, Any]
"""one parameter's optimizer state: tensors (exp_avg, exp_avg_sq, momentum_buffer, step) and numbers."""


def _zero(optimizer: Any) -> Any | None:
    """``optimizer`` when it is torch's ZeroRedundancyOptimizer, else None."""
    try:
        from torch.distributed.optim import ZeroRedundancyOptimizer
    except ImportError:  # a torch built without distributed
        return None
    return optimizer if isinstance(optimizer, ZeroRedundancyOptimizer) else None


def state_of(optimizer: Any, p: Tensor) -> State | None:
    """The optimizer state of ``p`` (None or empty: never stepped), the same on every rank. Under ZeRO
    this is a collective over the optimizer's process group (every rank must call it)."""
    zero = _zero(optimizer)
    if zero is None:
        return optimizer.state.get(p)
    owner = zero._param_to_rank[p]
    mine = zero.optim.state.get(p) if zero.rank == owner else None
    if zero.world_size == 1:
        return mine
    source = dist.get_global_rank(zero.process_group, owner)
    layout = [None if not mine else {k: (tuple(v.shape), v.dtype) if isinstance(v, Tensor) else v
                                     for k, v in mine.items()}]  # fmt: skip
    dist.broadcast_object_list(layout, src=source, group=zero.process_group)
    if layout[0] is None:
        return None
    out: State = {}
    for k, v in layout[0].items():
        if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], torch.dtype):
            buf = mine[k].detach().clone() if mine else torch.empty(v[0], dtype=v[1], device=p.device)
            dist.broadcast(buf, src=source, group=zero.process_group)
            out[k] = buf
        else:
            out[k] = v
    return out


def set_state(optimizer: Any, p: Tensor, state: State | None) -> None:
    """``p``'s optimizer state <- a copy of ``state`` (None or empty: none, as a parameter never stepped),
    written where the optimizer keeps it (under ZeRO, on the rank that owns ``p`` only)."""
    zero = _zero(optimizer)
    holder = optimizer if zero is None else zero.optim if zero._param_to_rank[p] == zero.rank else None
    if holder is None:
        return
    holder.state.pop(p, None)
    if state:
        holder.state[p] = {k: v.clone() if isinstance(v, Tensor) else v for k, v in state.items()}


def averaged(keep: State | None, other: State | None, shape: torch.Size) -> State | None:
    """``keep`` with each moment of the parameter's ``shape`` averaged with ``other``'s (the step count and
    other entries stay ``keep``'s); ``keep`` unchanged when either has no state yet."""
    if not keep or not other:
        return keep
    out = dict(keep)
    for k, v in keep.items():
        o = other.get(k)
        if isinstance(v, Tensor) and isinstance(o, Tensor) and v.shape == shape and o.shape == v.shape:
            out[k] = (v + o) * 0.5
    return out
