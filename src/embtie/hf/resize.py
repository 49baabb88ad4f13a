"""Growing or shrinking a sharing object's vocabulary, keeping every existing row bit-exactly.

A resized object is built fresh with the same strategy and options for the new vocabulary size, then
every tensor is carried over: tensors whose shape does not depend on V (projections, scalar scales)
whole, vocabulary tensors (E, an untied O, a bias, fixed targets T, nGPT's per-token scale) row by
row. Rows beyond the old size keep the new object's own draw: fresh strategy init for learned rows
(or, with ``mean_resizing``, the old rows' mean plus tiny noise, as transformers does), and freshly
drawn fixed target rows. Existing fixed targets are never re-drawn.
"""

from __future__ import annotations

from typing import Any

import torch

from embtie import sharing as catalogue
from embtie.sharing.base import SharingStrategy


def resized_sharing(
    old: SharingStrategy, vocab_size: int, options: dict[str, Any], *, mean_resizing: bool = True
) -> SharingStrategy:
    """A new sharing object for ``vocab_size`` tokens whose first min(V_old, V_new) rows equal ``old``'s.

    ``options`` are the options ``old`` was built with. With ``mean_resizing`` each new row of a learned
    vocabulary tensor is the mean of the old rows plus noise of std sqrt(1e-9) x the old rows' std per
    coordinate (a diagonal version of transformers' mean resizing); otherwise the strategy's own init.
    """
    ref = old.weight
    new = catalogue.build(old.name, vocab_size=vocab_size, dim=old.dim, **options).to(ref.device, ref.dtype)
    old_v, keep = old.vocab_size, min(old.vocab_size, vocab_size)
    learned = {name for name, p in new.named_parameters() if p.requires_grad}
    old_state = old.state_dict()
    with torch.no_grad():
        for name, t_new in new.state_dict().items():
            t_old = old_state[name]
            if t_old.shape == t_new.shape:
                t_new.copy_(t_old)
            elif t_old.shape[0] == old_v and t_new.shape[0] == vocab_size and t_old.shape[1:] == t_new.shape[1:]:
                t_new[:keep].copy_(t_old[:keep])
                if vocab_size > old_v and mean_resizing and name in learned:
                    rows = t_old.float()
                    mean, std = rows.mean(0), rows.std(0) if old_v > 1 else torch.zeros_like(rows[0])
                    noise = torch.randn((vocab_size - old_v, *t_new.shape[1:]), device=ref.device)
                    t_new[old_v:].copy_(mean + noise * std * 1e-9**0.5)
            else:
                shapes = f"{tuple(t_old.shape)} -> {tuple(t_new.shape)}"
                raise RuntimeError(f"cannot resize {old.name} tensor {name}: {shapes}")
    new.train(old.training)
    return new
