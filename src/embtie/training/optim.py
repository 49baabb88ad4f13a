"""Optimizer with explicit parameter groups, and learning-rate schedules as pure functions of the step.

Parameter groups (each with its own weight decay, set explicitly):
- ``embedding``: the vocabulary tables (``VocabularyTables.vocabulary_tables()``: E, a separate O, a
  separate encoder embedding, adaptive's cluster tables): ``embedding_weight_decay``;
- ``decay``: every other matrix (ndim >= 2): ``weight_decay``;
- ``no_decay``: vectors and scalars (biases, norm gains, learned scales): 0;
- ``lr_xM``: parameters a module gives its own learning rate M x lr (``lr_multipliers()``, e.g. a
  strategy's learned logit scale with ``logit_scale_lr``): weight decay 0.

The ``lr_xM`` groups carry ``lr_mult`` = M. ``param_groups`` is also the call a user's own
training loop makes (keywords instead of a TrainConfig; docs/your-loop.md).

The schedule is a function of the step alone (``lr_factor``), so resuming needs only the step.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from embtie.config import TrainConfig
from embtie.sharing.capabilities import VocabularyTables


def param_groups(
    model: nn.Module,
    cfg: TrainConfig | None = None,
    *,
    weight_decay: float | None = None,
    embedding_weight_decay: float | None = None,
    lr: float | None = None,
) -> list[dict[str, Any]]:
    """Trainable parameters of ``model`` split into embedding / decay / no_decay / lr_xM groups (each
    named), ready for any ``torch.optim`` optimizer. A parameter reachable under two names (tied modules)
    appears once.

    ``model`` may be any module holding embtie strategies (a user's own model too): they are found with
    ``isinstance``. The decays come from ``cfg`` (embtie's trainer) or, in a user's own loop, from the
    keywords, which override ``cfg``'s (without ``cfg`` they default to 0)::

        groups = param_groups(model, weight_decay=0.1, lr=6e-4)
        optimizer = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95))

    ``lr``: give every group its own ``lr`` = lr x its ``lr_mult`` (a strategy's ``logit_scale_lr``), so
    the multiplier holds with no further code; torch's lr schedulers keep it (they scale each group's own
    initial lr). A loop that writes one lr into every group itself must multiply by ``group.get("lr_mult", 1.0)``
    (as ``set_lr`` does), or the multiplier is lost.
    """
    wd = cfg.weight_decay if cfg is not None else 0.0
    emb_wd = cfg.embedding_weight_decay if cfg is not None else 0.0
    wd = wd if weight_decay is None else float(weight_decay)
    emb_wd = emb_wd if embedding_weight_decay is None else float(embedding_weight_decay)
    groups, mults = _split(model)
    decay = {"embedding": emb_wd, "decay": wd}
    out = []
    for k, v in groups.items():
        if not v:
            continue
        mult = mults[id(v[0])] if k.startswith("lr_x") else 1.0
        group: dict[str, Any] = {"name": k, "params": v, "weight_decay": decay.get(k, 0.0)}
        if mult != 1.0:
            group["lr_mult"] = mult
        if lr is not None:
            group["lr"] = lr * mult
        out.append(group)
    return out


def _split(model: nn.Module) -> tuple[dict[str, list[nn.Parameter]], dict[int, float]]:
    """({group name: its parameters}, {id of a parameter with its own lr: the multiplier})."""
    holders = [m for m in model.modules() if isinstance(m, VocabularyTables)]
    emb_ids = {id(p) for m in holders for p in m.vocabulary_tables()}
    mults = {id(getattr(m, name)): float(x) for m in holders for name, x in m.lr_multipliers().items()}
    groups: dict[str, list[nn.Parameter]] = {"embedding": [], "decay": [], "no_decay": []}
    seen: set[int] = set()
    for p in model.parameters():  # parameters() already deduplicates shared tensors
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        if id(p) in mults:
            groups.setdefault(f"lr_x{mults[id(p)]:g}", []).append(p)
        elif id(p) in emb_ids:
            groups["embedding"].append(p)
        elif p.dim() >= 2:
            groups["decay"].append(p)
        else:
            groups["no_decay"].append(p)
    return groups, mults


def build_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    groups = param_groups(model, cfg)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum)
    # fused: one kernel per step instead of a dozen elementwise passes over every tensor
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.betas[0], cfg.betas[1]), eps=cfg.eps, fused=True)


def total_steps(cfg: TrainConfig, steps_per_epoch: int) -> int:
    """Steps of the run: epochs x steps_per_epoch, capped by max_steps."""
    n = math.ceil(cfg.epochs * steps_per_epoch) if cfg.epochs is not None else None
    if cfg.max_steps is not None:
        n = cfg.max_steps if n is None else min(n, cfg.max_steps)
    assert n is not None
    return max(int(n), 1)


def lr_factor(step: int, cfg: TrainConfig, total: int, steps_per_epoch: int) -> float:
    """Multiplier of the peak lr for the update made at ``step`` (0-based).

    Linear warmup over ``warmup_steps``; then ``constant``; ``cosine`` / ``linear`` decay to
    ``min_lr_ratio`` at the last step; ``inverse_sqrt`` = sqrt(warmup / step) (Vaswani et al.);
    ``step`` = decay_factor ** max(0, epoch + 1 - decay_after_epochs) with 0-based epochs (Zaremba et
    al.: lr 1 for 4 epochs, then halved every epoch); ``plateau`` = 1 here, the decay on validation
    metrics being ``embtie.training.monitor``'s.
    """
    w = cfg.warmup_steps
    if step < w:
        return (step + 1) / w
    if cfg.schedule in ("constant", "plateau"):  # plateau: the trainer multiplies by TrainState.lr_scale
        return 1.0
    if cfg.schedule == "step":
        epoch = step // max(steps_per_epoch, 1)
        return cfg.decay_factor ** max(0, epoch + 1 - cfg.decay_after_epochs)
    if cfg.schedule == "inverse_sqrt":
        return math.sqrt(max(w, 1) / max(step + 1, 1)) if step + 1 > max(w, 1) else 1.0
    progress = (step - w) / max(total - 1 - w, 1)
    progress = min(max(progress, 0.0), 1.0)
    lo = cfg.min_lr_ratio
    if cfg.schedule == "cosine":
        return lo + (1 - lo) * 0.5 * (1 + math.cos(math.pi * progress))
    return 1.0 - (1 - lo) * progress  # linear


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Every group's lr: ``lr``, times the group's ``lr_mult`` where it has one."""
    for g in optimizer.param_groups:
        g["lr"] = lr * g.get("lr_mult", 1.0)
