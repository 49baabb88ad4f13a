"""Numerical faults: a loss or gradient that is not finite never reaches the weights or a checkpoint.

Every step's loss and global gradient norm are checked (one host sync per step on a GPU, free on the
CPU) before the optimizer step; under DDP the flag is summed over processes so that all of them take
the same branch. A non-finite step either stops training with one line (``NonFiniteError``: the step,
the value, the likely cause, the newest checkpoint on disk) or, with ``train.skip_nonfinite=N``, is
skipped (no update) up to N times. Before a checkpoint is written the weights are checked too.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from embtie import runtime
from embtie.config import TrainConfig
from embtie.errors import NonFiniteError
from embtie.rundir import checkpoints


def grad_norm(model: nn.Module, clip: float | None) -> torch.Tensor:
    """The global gradient 2-norm (a 0-d tensor), clipping the gradients to ``clip`` when given."""
    params = [p for p in model.parameters() if p.grad is not None]
    if clip is not None:
        return torch.nn.utils.clip_grad_norm_(params, clip)
    if not params:
        return torch.zeros(())
    return torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])


def step_is_finite(loss: torch.Tensor, gnorm: torch.Tensor, rt: runtime.Runtime) -> bool:
    """Whether this step's loss and gradient norm are finite on every process."""
    bad = float(not bool(torch.isfinite(loss.detach()).all() and torch.isfinite(gnorm).all()))
    if rt.distributed:
        bad = runtime.all_reduce_sum([bad], rt)[0]
    return bad == 0


def weights_are_finite(model: nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters() if p.is_floating_point())


def _value(t: torch.Tensor) -> str:
    v = float(t.detach().float())
    return "nan" if math.isnan(v) else str(v)


def _newest(out: Path) -> str:
    ckpt = checkpoints.latest(out)
    return f"the newest checkpoint, {ckpt}, is from before it" if ckpt else "no checkpoint was written yet"


def step_error(
    step: int,
    loss: torch.Tensor,
    gnorm: torch.Tensor,
    tc: TrainConfig,
    out: Path,
    updates: int | None = None,
    resumed_from: str | None = None,
) -> NonFiniteError:
    """The one-line error of a non-finite step (counted from 0, before its update). ``updates``: the updates
    applied before it (None: unknown); ``resumed_from``: the checkpoint when this is the first step after
    resuming from it. Both decide the likely cause (``likely_cause``)."""
    what = f"loss {_value(loss)}" if not bool(torch.isfinite(loss.detach()).all()) else f"gradient norm {_value(gnorm)}"
    cause, todo = likely_cause(tc, updates, resumed_from)
    return NonFiniteError(
        f"step {step}: {what} is not finite, training stopped before updating the weights; likely cause: {cause}; "
        f"{_newest(out)}; {todo}"
    )


def likely_cause(tc: TrainConfig, updates: int | None, resumed_from: str | None) -> tuple[str, str]:
    """(the likely cause of a non-finite step, what to do): the checkpoint just resumed from, the
    initialisation (no update applied yet, so the learning rate played no part), or the learning rate."""
    low_precision = tc.precision == "bf16"
    if resumed_from is not None:
        return (
            f"the checkpoint this run just resumed from, {resumed_from} (its weights or optimizer state), not the "
            "learning rate: this is the first step after resuming",
            f"resume from an older checkpoint by moving {resumed_from} away, or train again into a new --out",
        )
    if updates == 0:
        precision = f", or the {tc.precision} precision (try train.precision=fp32)" if low_precision else ""
        return (
            "the initialisation, not the learning rate: no update was applied yet (check sharing.options such as "
            f"init_std, logit_scale and embed_scale, and the model's settings{precision})",
            "fix the config and train it into a new --out",
        )
    return (
        f"a learning rate too high for this model (train.lr={tc.lr:g}, train.grad_clip={tc.grad_clip}) or a "
        f"{'bf16' if tc.precision == 'bf16' else 'numerical'} overflow",
        "lower train.lr into a new --out, or set train.skip_nonfinite=N to skip such steps",
    )


def weights_error(step: int, tc: TrainConfig, out: Path) -> NonFiniteError:
    """The one-line error of weights that became non-finite by step ``step`` (no checkpoint written)."""
    return NonFiniteError(
        f"step {step}: the weights are no longer finite, so this step's checkpoint was not written; likely cause: a "
        f"learning rate too high for this model (train.lr={tc.lr:g}); {_newest(out)}; lower train.lr into a new --out"
    )


INIT_BLOWUP = 10.0
"""an initial loss above INIT_BLOWUP x ln V (a uniform guess scores ln V) puts the blame on the initialisation."""


def diverged_note(
    valid_loss: float, valid_ppl: float, tc: TrainConfig, step0_loss: float | None = None, vocab_size: int | None = None
) -> str | None:
    """One line when a run finished with every step finite but an infinite validation perplexity (a loss
    past what exp holds, about 709 nats per token, where a uniform guess scores ln V): the training
    diverged, and the run's figures are not a model's. None otherwise. The likely cause is the
    initialisation when the first batch's loss, before any update, was already over ``INIT_BLOWUP`` x ln V
    (``step0_loss``, ``vocab_size``), else the learning rate."""
    if math.isfinite(valid_ppl):
        return None
    head = f"note: the final validation perplexity is infinite (validation loss {valid_loss:.4g} nats per token)"
    if step0_loss is not None and vocab_size and vocab_size > 1 and step0_loss > INIT_BLOWUP * math.log(vocab_size):
        return (
            f"{head}: the run never learned; likely cause: the initialisation, not the learning rate: the first "
            f"batch's loss, before any update, was already {step0_loss:.4g} nats per token (a uniform guess scores "
            f"ln V = {math.log(vocab_size):.2f}); check sharing.options such as init_std, logit_scale and "
            "embed_scale, and the model's settings, then train into a new --out"
        )
    return (
        f"{head}: the training diverged; likely cause: a learning rate too high for this model (train.lr={tc.lr:g}, "
        f"train.grad_clip={tc.grad_clip}); lower train.lr into a new --out"
    )
