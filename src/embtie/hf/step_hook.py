"""The warning a patched model gives when it is trained without its strategy's step hook.

tie-untie changes between optimizer steps: its ``on_train_step`` unties it at its step (``needs_step_hook``).
embtie's trainer, a loop written after docs/your-loop.md and ``EmbtieCallback`` call the hook; transformers'
``Trainer`` alone does not, and the model then trains tied to the end without a word. Every training step of a
Trainer passes through the patched model's forward with labels (``EmbtieModelMixin``), which calls ``check``:
at the first training forward the hook has not preceded, it notes a fingerprint of the strategy's matrix E (its
sum in float64; tied E is the output matrix too, so every optimizer step moves every row of it); at a later
one, when the fingerprint has moved (an optimizer step has run) and the hook has still never run, it warns
once. A loop that calls the hook before every optimizer step, as documented, is never warned, even one that
calls it after the step's forward passes. The cost: one reduction of E per training forward, and only while
the hook has never run. (Tensor version counters would be cheaper, but the Trainer's AdamW step left them
unchanged in transformers 5.23.)
"""

from __future__ import annotations

import warnings
import weakref

import torch

from embtie.sharing.base import SharingStrategy

_FIRST: weakref.WeakKeyDictionary[SharingStrategy, float] = weakref.WeakKeyDictionary()
"""per sharing object: E's fingerprint at its first training forward without the hook."""
_WARNED: weakref.WeakSet[SharingStrategy] = weakref.WeakSet()


def message(sharing: SharingStrategy) -> str:
    return (
        f"strategy {sharing.name!r} changes between optimizer steps in its step hook, and this model took an "
        "optimizer step without it: it will never untie. Under transformers' Trainer add embtie's callback, "
        "Trainer(..., callbacks=[EmbtieCallback()]) after `from embtie.hf.callback import EmbtieCallback` (or "
        "trainer.add_callback(EmbtieCallback())); in your own loop call "
        "model.embtie_sharing.on_train_step(step, total_steps, optimizer) before every optimizer step"
    )


def _fingerprint(sharing: SharingStrategy) -> float:
    """The sum of E's elements in float64 (no copy of E): any optimizer step that updates E moves it."""
    return float(sharing.weight.detach().sum(dtype=torch.float64))


def check(sharing: SharingStrategy) -> None:
    """Called at every training forward of a patched model: one warning (``message``) once an optimizer step
    has updated a strategy that ``needs_step_hook`` while its hook has never run."""
    if not sharing.needs_step_hook or sharing.step_hook_ran or sharing in _WARNED or torch.compiler.is_compiling():
        return
    first = _FIRST.get(sharing)
    if first is None:
        _FIRST[sharing] = _fingerprint(sharing)
    elif _fingerprint(sharing) != first:
        _WARNED.add(sharing)
        warnings.warn(message(sharing), UserWarning, stacklevel=3)
