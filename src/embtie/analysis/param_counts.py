"""Learned vs fixed parameter counts (Shalev et al., Table 3): one count of a model, written under two
sets of keys (a run's summary.json and its diagnostics), which stored runs keep and reports re-read."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from embtie.sharing.base import SharingStrategy


@dataclass(frozen=True)
class ParameterCounts:
    """Elements of a model's weights.

    ``learned``: trainable parameters of the whole model (a tensor shared under two names once).
    ``fixed``: the strategy's fixed tables (its buffers); other model buffers (rotary tables, causal
    masks) are not weights and are not counted, so the model's fixed elements are the strategy's.
    ``sharing_learned``: trainable parameters of the strategy alone.
    """

    learned: int
    fixed: int
    sharing_learned: int

    def summary_fields(self) -> dict[str, int]:
        """The keys of summary.json."""
        return {
            "params_learned": self.learned,
            "params_fixed": self.fixed,
            "params_sharing_learned": self.sharing_learned,
        }

    def diagnostics_fields(self) -> dict[str, int]:
        """The keys of diagnostics.json's ``params``."""
        return {
            "learned": self.learned,
            "fixed": self.fixed,
            "sharing_learned": self.sharing_learned,
            "sharing_fixed": self.fixed,
        }


def count_parameters(model: nn.Module, strategy: SharingStrategy | None) -> ParameterCounts:
    """The counts of ``model`` whose sharing strategy is ``strategy`` (None: a model without one)."""
    learned = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if strategy is None:
        return ParameterCounts(learned=learned, fixed=0, sharing_learned=0)
    own = strategy.parameter_counts()
    return ParameterCounts(learned=learned, fixed=own["fixed"], sharing_learned=own["learned"])


def model_parameter_counts(model: nn.Module, sharing_module: SharingStrategy | None = None) -> dict[str, int]:
    """{"learned", "fixed", "sharing_learned", "sharing_fixed"} of ``model`` (see ``ParameterCounts``)."""
    return count_parameters(model, sharing_module).diagnostics_fields()

