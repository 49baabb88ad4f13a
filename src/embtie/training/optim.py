"""Optimizer with explicit parameter groups, and learning-rate schedules as pure functions of the step.

Parameter groups (each with its own weight decay, set explicitly):
- ``embedding``: the input vocabulary tables (``VocabularyTables.vocabulary_tables()``: E, a separate
  encoder embedding, adaptive's cluster tables; a tied E is one of them) with ``train.embedding_*``
  (weight decay, and lr / betas when set: ``embtie.training.table_settings``);
- ``head``: a separate learned output matrix O (``head_tables()``) with ``train.head_*``, a group of its
  own only when those differ from the embedding's (else O stays in ``embedding``, as checkpoints written
  before the head settings expect);
- ``muon`` (``train.optimizer=muon`` only): the body's 2-D matrices, the weights of ``nn.Linear`` modules
  outside the vocabulary tables, which ``torch.optim.Muon`` updates (``embtie.training.muon_adamw``);
- ``decay``: every other matrix (ndim >= 2): ``weight_decay``;
- ``no_decay``: vectors and scalars (biases, norm gains, learned scales): 0;
- ``lr_xM``: parameters a module gives its own learning rate M x lr (``lr_multipliers()``, e.g. a
  strategy's learned logit scale with ``logit_scale_lr``): weight decay 0.

Groups whose lr is not train.lr carry ``lr_mult`` (their lr / train.lr). ``param_groups`` is also the call
a user's own training loop makes (keywords instead of a TrainConfig; docs/your-loop.md).

The schedule is a function of the step alone (``lr_factor``), so resuming needs only the step.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from embtie.config import TrainConfig
from embtie.errors import ConfigError
from embtie.schema import check_as
from embtie.sharing.capabilities import VocabularyTables
from embtie.training.muon_adamw import MuonAdamW
from embtie.training.table_settings import TableSettings, table_settings


def param_groups(
    model: nn.Module,
    cfg: TrainConfig | None = None,
    *,
    weight_decay: float | None = None,
    embedding_weight_decay: float | None = None,
    lr: float | None = None,
    head: TableSettings | None = None,
) -> list[dict[str, Any]]:
    """Trainable parameters of ``model`` split into embedding / head / muon / decay / no_decay / lr_xM
    groups (each named; empty ones left out), ready for any ``torch.optim`` optimizer. A parameter
    reachable under two names (tied modules) appears once.

    ``model`` may be any module holding embtie strategies (a user's own model too): they are found with
    ``isinstance``. The decays come from ``cfg`` (embtie's trainer) or, in a user's own loop, from the
    keywords, which override ``cfg``'s (without ``cfg`` they default to 0)::

        groups = param_groups(model, weight_decay=0.1, lr=6e-4)
        optimizer = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95))

    ``head``: a separate head's settings (overrides ``cfg``'s ``head_*``). ``lr``: give every group its own
    ``lr`` = lr x its ``lr_mult``, so the multiplier holds with no further code; torch's lr schedulers keep
    it (they scale each group's own initial lr). A loop that writes one lr into every group itself must
    multiply by ``group.get("lr_mult", 1.0)`` (as ``set_lr`` does), or the multiplier is lost.
    """
    _check_arguments(model, cfg)
    _check_keywords(weight_decay, embedding_weight_decay, lr, head)
    emb, head_set = table_settings(cfg) if cfg is not None else (TableSettings(), TableSettings())
    wd = cfg.weight_decay if cfg is not None else 0.0
    wd = wd if weight_decay is None else float(weight_decay)
    if embedding_weight_decay is not None:
        emb = replace(emb, weight_decay=float(embedding_weight_decay))
        if cfg is None or cfg.head_weight_decay is None:  # the head's decay follows the embedding's
            head_set = replace(head_set, weight_decay=emb.weight_decay)
    head_set = head_set if head is None else head
    has_head = bool(_head_ids(model))
    if cfg is not None:
        cfg.check_head(has_head, f"model {type(model).__name__}")
    if head is not None and not has_head:
        raise ConfigError(
            f"param_groups(head=...) is given but model {type(model).__name__} has no separate learned head (a tied "
            "E takes the embedding settings); leave head out"
        )
    groups, mults = _split(model, separate_head=head_set != emb, muon=cfg is not None and cfg.optimizer == "muon")
    settings = {"embedding": emb, "head": head_set, "decay": TableSettings(wd), "muon": TableSettings(wd)}
    out = []
    for k, v in groups.items():
        if not v:
            continue
        mult = mults[id(v[0])] if k.startswith("lr_x") else 1.0
        group: dict[str, Any] = {"name": k, "params": v, **settings.get(k, TableSettings(0.0, mult)).group_keys()}
        if lr is not None:
            group["lr"] = lr * group.get("lr_mult", 1.0)
        out.append(group)
    return out


def _check_arguments(model: object, cfg: object) -> None:
    """``param_groups``' positional arguments of the types it reads: a one-line ConfigError naming them (a
    config as a dict would otherwise fail deep inside with an AttributeError)."""
    if not isinstance(model, nn.Module):
        raise ConfigError(f"param_groups(model=...) must be the torch module to train, not {type(model).__name__}")
    if cfg is not None and not isinstance(cfg, TrainConfig):
        raise ConfigError(
            f"param_groups(cfg=...) must be an embtie TrainConfig (embtie.config) or None, not {type(cfg).__name__}; "
            "a foreign loop passes the keywords instead (weight_decay=..., lr=...)"
        )


def _check_keywords(
    weight_decay: float | None, embedding_weight_decay: float | None, lr: float | None, head: object
) -> None:
    """``param_groups``' keywords in the ranges of the config keys they stand for (``train.weight_decay``,
    ``train.embedding_weight_decay``, ``train.lr``): a one-line ConfigError naming the keyword."""
    for name, value in (("weight_decay", weight_decay), ("embedding_weight_decay", embedding_weight_decay)):
        if value is not None:
            check_as(TrainConfig, name, value, f"param_groups({name})", float)
    if lr is not None:
        check_as(TrainConfig, "lr", lr, "param_groups(lr)")
    if head is not None and not isinstance(head, TableSettings):
        raise ConfigError(
            "param_groups(head=...) must be a TableSettings (embtie.training.table_settings), "
            f"not {type(head).__name__}"
        )


def _holders(model: nn.Module) -> list[VocabularyTables]:
    return [m for m in model.modules() if isinstance(m, VocabularyTables)]


def _head_ids(model: nn.Module) -> set[int]:
    return {id(p) for m in _holders(model) for p in m.head_tables()}


def _muon_ids(model: nn.Module) -> set[int]:
    """The weights of the ``nn.Linear`` modules of the body (outside every vocabulary-table module)."""
    inside = {id(m) for h in _holders(model) for m in h.modules()}
    return {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear) and id(m) not in inside}


def _split(model: nn.Module, separate_head: bool, muon: bool) -> tuple[dict[str, list[nn.Parameter]], dict[int, float]]:
    """({group name: its parameters}, {id of a parameter with its own lr: the multiplier})."""
    holders = _holders(model)
    emb_ids = {id(p) for m in holders for p in m.vocabulary_tables()}
    head_ids = _head_ids(model) if separate_head else set()
    muon_ids = _muon_ids(model) if muon else set()
    mults = {id(getattr(m, name)): float(x) for m in holders for name, x in m.lr_multipliers().items()}
    groups: dict[str, list[nn.Parameter]] = {"embedding": [], "head": [], "muon": [], "decay": [], "no_decay": []}
    seen: set[int] = set()
    for p in model.parameters():  # parameters() already deduplicates shared tensors
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        if id(p) in mults:
            groups.setdefault(f"lr_x{mults[id(p)]:g}", []).append(p)
        elif id(p) in head_ids:
            groups["head"].append(p)
        elif id(p) in emb_ids:
            groups["embedding"].append(p)
        elif id(p) in muon_ids and p.dim() == 2:
            groups["muon"].append(p)
        elif p.dim() >= 2:
            groups["decay"].append(p)
        else:
            groups["no_decay"].append(p)
    return groups, mults


def muon_reach(model: nn.Module) -> tuple[int, int]:
    """(tensors, elements) of ``model`` that ``train.optimizer=muon`` gives Muon: the ``muon`` group."""
    groups, _ = _split(model, separate_head=False, muon=True)
    return len(groups["muon"]), sum(p.numel() for p in groups["muon"])


def muon_missed(model: nn.Module) -> list[str]:
    """The names of the body's matrices that ``train.optimizer=muon`` leaves to AdamW although they are
    neither vocabulary tables nor lookup tables: 2-D weights outside ``nn.Linear`` (a Conv1D, an LSTM's
    ``weight_ih_l0``), which Muon's orthogonalised update would have reached had they been Linear layers.
    Position tables (``nn.Embedding``) are lookups, not missed."""
    groups, _ = _split(model, separate_head=False, muon=True)
    decay = {id(p) for p in groups["decay"]}
    lookups = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    return [n for n, p in model.named_parameters() if id(p) in decay and p.dim() == 2 and id(p) not in lookups]


def check_reach(model: nn.Module, cfg: TrainConfig, what: str = "this model") -> str | None:
    """``train.optimizer=muon`` must reach a parameter: a model without ``nn.Linear`` layers in its body (a
    Hugging Face GPT-2 builds its blocks of transformers' Conv1D) would give every parameter AdamW, the very
    run ``train.optimizer=adamw`` makes, under another name (a one-line ConfigError with the count). When it
    reaches only some of the body's matrices, the one-line note to show (how many it reaches, how many get
    AdamW instead, the first of those named); None when it reaches them all or the optimizer is not muon."""
    if cfg.optimizer != "muon":
        return None
    tensors, elements = muon_reach(model)
    if tensors == 0:
        raise ConfigError(
            f"train.optimizer=muon reaches 0 parameters of {what}: Muon updates the weights of nn.Linear layers "
            f"outside the vocabulary tables, and {type(model).__name__} has none (a Hugging Face GPT-2's blocks are "
            "Conv1D, an LSTM's cells hold their own matrices), so every parameter would get AdamW: the same run "
            "as train.optimizer=adamw; use adamw, or a model with nn.Linear layers (model.name=gpt, "
            "model.hf=llama-tiny)"
        )
    missed = muon_missed(model)
    if not missed:
        return None
    params = dict(model.named_parameters())
    left = sum(params[n].numel() for n in missed)
    return (
        f"note: train.optimizer=muon reaches {tensors} of the {tensors + len(missed)} body matrices of {what} "
        f"({elements:,} of {elements + left:,} elements); the other {len(missed)} are not nn.Linear weights "
        f"and get AdamW (e.g. {missed[0]})"
    )


def build_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The run's optimizer over ``param_groups``: SGD, AdamW, or Muon for the ``muon`` group with AdamW for
    the others (one ``MuonAdamW``, whose state and groups checkpoints hold as one optimizer's); muon that
    reaches no parameter is refused (``check_reach``; its note on a partial reach is the caller's to show)."""
    check_reach(model, cfg)
    groups = param_groups(model, cfg)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum)
    betas = (cfg.betas[0], cfg.betas[1])
    if cfg.optimizer == "muon":
        muon = [g for g in groups if g["name"] == "muon"]
        muon_keys = {"lr_mult": (cfg.lr if cfg.muon_lr is None else cfg.muon_lr) / cfg.lr}
        return MuonAdamW(
            [{**g, **muon_keys} for g in muon],
            [g for g in groups if g["name"] != "muon"],
            lr=cfg.lr,
            betas=betas,
            eps=cfg.eps,
            momentum=cfg.muon_momentum,
            adjust_lr_fn=cfg.muon_adjust_lr,
        )
    # fused: one kernel per step instead of a dozen elementwise passes over every tensor
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=betas, eps=cfg.eps, fused=True)


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
