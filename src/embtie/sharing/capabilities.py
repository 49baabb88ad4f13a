"""What the training loop asks of a module that holds vocabulary tables.

A sharing strategy is one such module (``SharingStrategy`` inherits ``VocabularyTables``); a module
that only embeds, such as a translation encoder's separate source embedding, is another. The training
loop finds them with ``isinstance`` and calls the methods declared here, whose defaults describe a
module that needs nothing special: its 2-d tables of ``vocab_size`` rows go in the optimizer's
embedding group, every parameter uses train.lr, and nothing happens between optimizer steps.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from embtie.sharing.step_call import check_step


class VocabularyTables(nn.Module):
    """A module with tables indexed by token id (subclasses set ``vocab_size``)."""

    vocab_size: int
    idle_parameters: ClassVar[bool] = False
    """Whether some parameter gets no gradient on some steps (tie-untie's O before the untie): data-parallel
    training must then look for unused parameters each step (DDP's ``find_unused_parameters``)."""
    needs_step_hook: ClassVar[bool] = False
    """Whether ``on_train_step`` changes what the module computes (tie-untie's untie): a loop that never calls
    it trains another model than the one named (``embtie.hf.step_hook`` warns when a patched Hugging Face model
    takes an optimizer step without it)."""

    def vocabulary_tables(self) -> list[nn.Parameter]:
        """The parameters that get the optimizer's embedding group (``embedding_weight_decay``): by default
        every 2-d parameter with ``vocab_size`` rows (E, a separate O)."""
        return [p for p in self.parameters() if p.dim() == 2 and p.shape[0] == self.vocab_size]

    def head_tables(self) -> list[nn.Parameter]:
        """The learned output matrices that are not also an input table (a separate O): the optimizer's
        ``head`` settings (``train.head_lr``, ...) apply to them; a shared (tied) E is an input table. By
        default none."""
        return []

    def lr_multipliers(self) -> dict[str, float]:
        """{attribute name of a parameter: its learning rate as a multiple of train.lr} for the parameters
        that do not use train.lr itself (read by ``embtie.training.optim.param_groups``)."""
        return {}

    def on_train_step(self, step: int, total_steps: int, optimizer: torch.optim.Optimizer | None = None) -> None:
        """Called by the trainer before optimizer step ``step`` (0-based) of ``total_steps``, with the
        optimizer whose state a change of parameters may need to carry over. Here only the step is checked
        (``step_call.check_step``: an integer in [0, total_steps), total_steps in ``train.max_steps``'s
        range), so that a table with nothing to do refuses what a strategy refuses."""
        check_step(step, total_steps)
