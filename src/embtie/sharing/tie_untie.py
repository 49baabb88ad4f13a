"""Tie, then untie (modded-nanogpt record PR #178: the LM head untied from the embedding 2/3 of the way
through training), and optionally tie again.

Until step ``untie_at * total_steps`` the strategy is ``tied`` (z_i = e_i . h). At that step the
trainer's per-step hook (``on_train_step``) copies E into the output matrix O and copies E's optimizer
state (Adam's exp_avg, exp_avg_sq and step; SGD's momentum) to O, so that O continues E's trajectory;
from then on the strategy is ``untied`` (input e_i, z_i = o_i . h), both matrices learning separately.

O exists from the start (so the optimizer and checkpoints hold it throughout) and gets no gradient
while tied. Whether the switch happened is the 0-d buffer ``untied`` (saved with the weights), so a
run resumed after the switch, and a model loaded for evaluation, use O.

Re-tie (option ``retie_at``; issue 43: modded-nanogpt later re-tied the head): at step
``round(retie_at * total_steps)`` the two matrices become one again, E, and from then on the strategy is
``tied`` (O is kept but no longer used, so it gets no gradient). What the re-tied E is (``retie_to``):

- ``input`` (default): E as it is, with its own optimizer state: the input table's trajectory goes on
  unbroken and the head learned since the untie is dropped;
- ``average``: E <- (E + O) / 2, and each of E's optimizer moments <- the average of E's and O's (Adam's
  exp_avg and exp_avg_sq, SGD's momentum; the step count stays E's, which O's equals, copied at the
  untie): what both sides learned since the untie is kept, each at half weight.

The re-tie is the 0-d buffer ``retied``, which exists only when ``retie_at`` is set (the weights of a
run without it keep their names).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import torch
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.schema import Setting
from embtie.sharing import moments
from embtie.sharing.registry import register
from embtie.sharing.step_call import keeps_moments, moment_words
from embtie.sharing.tied import Tied

RetieTo = Literal["input", "average"]
"""the values of option ``retie_to``."""


@register
class TieUntie(Tied):
    """Tied until ``untie_at`` of training, then untied with O <- E and E's optimizer state copied; tied
    again at ``retie_at`` when it is set."""

    name = "tie-untie"
    formula = (
        "tied (z_i = e_i . h) until step untie_at*total; then O <- E (and its optimizer moments), z_i = o_i . h; "
        "tied again from retie_at*total when set"
    )
    source = "modded-nanogpt record PR #178 (untie the LM head 2/3 through training)"

    untied: Tensor
    """0-d buffer, 1 once the matrices are untied (saved with the weights)."""
    retied: Tensor | None
    """0-d buffer, 1 once they are tied again; None without ``retie_at``."""

    zero_head_refusal = (
        "is tied until the untie step, where O <- E replaces O's initial values: a zero O would never be used"
    )

    idle_parameters: ClassVar[bool] = True  # O gets no gradient until the untie
    needs_step_hook: ClassVar[bool] = True  # the untie (and re-tie) happen in on_train_step
    declared_options: ClassVar[dict[str, Setting]] = {
        "untie_at": Setting("the fraction of training after which O <- E and the matrices learn apart", ge=0, le=1),
        "retie_at": Setting(
            "the fraction of training after which the matrices are one again (after untie_at)",
            ge=0,
            le=1,
            null="never re-tied",
        ),
        "retie_to": Setting(
            "what the re-tied matrix is: input (E and its optimizer state as they are) or average (E <- (E + O) / 2, "
            "moments averaged)"
        ),
    }

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        untie_at: float = 2.0 / 3.0,
        retie_at: float | None = None,
        retie_to: RetieTo = "input",
        **options: Any,
    ) -> None:
        self.untie_at = float(untie_at)
        self.retie_at = None if retie_at is None else float(retie_at)
        self.retie_to = retie_to
        _check_retie(self.untie_at, self.retie_at, retie_to, options.get("factor_rank"))
        super().__init__(vocab_size, dim, **options)
        self.out_weight = nn.Parameter(torch.empty(vocab_size, dim))
        self.register_buffer("untied", torch.zeros(()))
        self.register_buffer("retied", torch.zeros(()) if self.retie_at is not None else None)
        self._is_untied = False  # mirrors the buffers without a host sync per forward
        self._is_retied = False
        self._switched: tuple[int, int, int] | None = None
        """(step, total_steps, id of the optimizer) of the last switch this process made (``_check_schedule``)."""
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        self.init_(self.out_weight)

    def separate_output_weight(self) -> nn.Parameter | None:
        return self.out_weight

    @property
    def is_untied(self) -> bool:
        """True while O is the output matrix (after the untie, before a re-tie)."""
        return self._is_untied and not self._is_retied

    @property
    def is_retied(self) -> bool:
        return self._is_retied

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        return (self.out_weight if self.is_untied else self.weight), None, None

    def untie_step(self, total_steps: int) -> int:
        """The step at whose start the matrices are untied: round(untie_at * total_steps)."""
        return round(self.untie_at * total_steps)

    def retie_step(self, total_steps: int) -> int | None:
        """The step at whose start the matrices are tied again: round(retie_at * total_steps), or None."""
        return None if self.retie_at is None else round(self.retie_at * total_steps)

    def on_train_step(self, step: int, total_steps: int, optimizer: torch.optim.Optimizer | None = None) -> None:
        """Called before every optimizer step ``step`` (0-based) of ``total_steps``: unties at ``untie_step``,
        re-ties at ``retie_step``."""
        super().on_train_step(step, total_steps, optimizer)
        step, total_steps = int(step), int(total_steps)
        self._check_schedule(step, total_steps, optimizer)
        if not self._is_untied and step >= self.untie_step(total_steps):
            self.untie(optimizer, step)
            self._switched = (step, total_steps, id(optimizer))
        retie = self.retie_step(total_steps)
        if retie is not None and self._is_untied and not self._is_retied and step >= retie:
            self.retie(optimizer, step)
            self._switched = (step, total_steps, id(optimizer))

    def _check_schedule(self, step: int, total_steps: int, optimizer: Any) -> None:
        """Once this process has switched (at step s of T, with optimizer X), refuse a call that belongs to another
        training: a total_steps other than T (the switch steps are fractions of it), a step before s (the
        schedule says the matrices were not yet switched there), or another optimizer that holds no state for the
        matrix now in use while X's moments would be dropped (a fresh optimizer mid-training). A model loaded from
        a checkpoint has made no switch in this process, so fine-tuning it from step 0 is not refused."""
        if self._switched is None:
            return
        at, total, made_with = self._switched
        what = "re-tie" if self._is_retied else "untie"
        new = "build a new strategy (or load the model) for a new training"
        if total_steps != total:
            raise ConfigError(
                f"strategy {self.name!r}: on_train_step(total_steps={total_steps}) after its {what} at step {at} of "
                f"{total}: untie_at and retie_at are fractions of one training's total_steps; pass {total} "
                f"throughout, or {new}"
            )
        if step < at:
            raise ConfigError(
                f"strategy {self.name!r}: on_train_step(step={step}) goes back before its {what} at step {at} of "
                f"{total}, where the schedule says the matrices were not yet switched; steps of one training do not "
                f"go back (a resumed run continues from its saved step), or {new}"
            )
        if optimizer is None or id(optimizer) == made_with or not keeps_moments(optimizer) or step == 0:
            return
        used = self.weight if self._is_retied else self.out_weight
        if not moments.state_of(optimizer, used):
            raise ConfigError(
                f"strategy {self.name!r}: on_train_step(step={step}) got another optimizer than at its {what} at step "
                f"{at}, and it holds no state for {'E' if self._is_retied else 'O'}: the {moment_words(optimizer)} "
                "learned so far would restart from zero; pass the optimizer that has been stepping, or load its "
                "state first"
            )

    def _check_moments(self, step: int, optimizer: Any, state: moments.State | None, what: str) -> None:
        """Refuse a switch after step 0 whose optimizer keeps moments (``step_call.keeps_moments``) but holds
        none for the matrix they come from: no optimizer step has updated it yet (a call before training, or a
        fresh optimizer at a later step), so the matrix would go on without them. ``state`` is that matrix's
        (``moments.state_of``, the same on every rank)."""
        if step == 0 or optimizer is None or state or not keeps_moments(optimizer):
            return
        kept = moment_words(optimizer)
        lost = f"O would start without E's {kept}"
        lost = lost if what == "unties" else f"the re-tied E would not average their {kept}"
        raise ConfigError(
            f"strategy {self.name!r} {what} at on_train_step(step={step}) but the optimizer holds no state for "
            f"{'E' if what == 'unties' else 'E and O'} yet (no optimizer step has updated it), so {lost}: call "
            "on_train_step before every optimizer.step() from step 0, or load the optimizer's state first"
        )

    @torch.no_grad()
    def untie(self, optimizer: torch.optim.Optimizer | None = None, step: int = 0) -> None:
        """O <- E; E's optimizer state copied to O (unless E is factorized: O's state then starts empty).
        After step 0 an optimizer that keeps moments must hold E's (``_check_moments``)."""
        if optimizer is not None and self.factor_b is None:
            state = moments.state_of(optimizer, self.weight)  # a collective under ZeRO: every rank calls it
            self._check_moments(step, optimizer, state, "unties")
            moments.set_state(optimizer, self.out_weight, state)
        elif optimizer is not None:
            moments.set_state(optimizer, self.out_weight, None)
        self.out_weight.copy_(self.embedding_matrix())
        self.untied.fill_(1.0)
        self._is_untied = True

    @torch.no_grad()
    def retie(self, optimizer: torch.optim.Optimizer | None = None, step: int = 0) -> None:
        """E becomes the one matrix again (``retie_to``: input, or average with the moments averaged; an
        average after step 0 needs both matrices' moments when the optimizer keeps them)."""
        if self.retie_to == "average":
            if optimizer is not None:
                mine, theirs = moments.state_of(optimizer, self.weight), moments.state_of(optimizer, self.out_weight)
                self._check_moments(step, optimizer, mine and theirs, "re-ties")
                moments.set_state(optimizer, self.weight, moments.averaged(mine, theirs, self.weight.shape))
            self.weight.add_(self.out_weight).mul_(0.5)
        if self.retied is not None:
            self.retied.fill_(1.0)
        self._is_retied = True

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._is_untied = bool(self.untied)
        self._is_retied = self.retied is not None and bool(self.retied)
        self._switched = None  # loaded weights start a new training as far as the schedule checks go

    def parameter_counts(self) -> dict[str, int]:
        """As the base, without the 0-d phase flags (not fixed tables)."""
        counts = super().parameter_counts()
        counts["fixed"] -= self.untied.numel() + (0 if self.retied is None else self.retied.numel())
        return counts


def _check_retie(untie_at: float, retie_at: float | None, retie_to: str, factor_rank: object) -> None:
    """One-line ConfigErrors for a re-tie that cannot happen as asked."""
    if retie_at is not None and retie_at <= untie_at:
        raise ConfigError(
            f"option retie_at={retie_at:g} must be after untie_at={untie_at:g}: the matrices are re-tied after "
            "they were untied"
        )
    if retie_to != "input" and retie_at is None:
        raise ConfigError(f"option retie_to={retie_to} needs retie_at, the fraction of training to re-tie at")
    if retie_to == "average" and factor_rank is not None:
        raise ConfigError(
            "option retie_to=average cannot write (E + O) / 2 into a factorized E = A B (factor_rank); "
            "use retie_to=input"
        )
