"""Muon for the body's matrices, AdamW for everything else, as one optimizer (modded-nanogpt's recipe;
Keller Jordan's Muon, ``torch.optim.Muon`` in torch >= 2.9).

``MuonAdamW`` is a ``torch.optim.Optimizer`` whose ``param_groups`` are the Muon groups followed by the
AdamW groups and whose ``state`` is the one dict both inner optimizers write into. So everything that
handles an optimizer handles it unchanged: ``state_dict``/``load_state_dict`` (checkpoints hold both
optimizers' state, and a resumed run continues bitwise), ``zero_grad``, an lr schedule that writes every
group's ``lr`` (``embtie.training.optim.set_lr`` drives both), and tie-untie's copy of E's state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.optim import AdamW, Muon, Optimizer


class MuonAdamW(Optimizer):
    """Muon over ``muon_groups`` (2-D tensors only), fused AdamW over ``adamw_groups``; one state."""

    def __init__(
        self,
        muon_groups: list[dict[str, Any]],
        adamw_groups: list[dict[str, Any]],
        *,
        lr: float,
        betas: tuple[float, float],
        eps: float,
        momentum: float,
        adjust_lr_fn: str,
    ) -> None:
        """Groups as ``embtie.training.optim.param_groups`` makes them (their own keys are kept); the
        keywords are each inner optimizer's defaults. Muon's weight decay is each group's ``weight_decay``."""
        self._muon = Muon(muon_groups, lr=lr, momentum=momentum, adjust_lr_fn=adjust_lr_fn) if muon_groups else None
        self._adamw = AdamW(adamw_groups, lr=lr, betas=betas, eps=eps, fused=True)
        self._n_muon = len(muon_groups)
        inner = ([] if self._muon is None else self._muon.param_groups) + self._adamw.param_groups
        super().__init__(inner, {"lr": lr})  # the same group dicts: an lr written here reaches the inner ones
        self._bind()

    def _bind(self) -> None:
        """Point the inner optimizers at this optimizer's groups and state (after it replaced them)."""
        if self._muon is not None:
            self._muon.param_groups = self.param_groups[: self._n_muon]
            self._muon.state = self.state
        self._adamw.param_groups = self.param_groups[self._n_muon :]
        self._adamw.state = self.state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """``load_state_dict`` installs new groups and state through here: the inner optimizers follow."""
        super().__setstate__(state)
        if "_adamw" in self.__dict__:  # not while unpickling, before the inner optimizers exist
            self._bind()

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One Muon step over the body's matrices, then one AdamW step over the rest."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if self._muon is not None:
            self._muon.step()
        self._adamw.step()
        return loss
