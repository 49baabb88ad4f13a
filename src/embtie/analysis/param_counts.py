"""Learned vs fixed parameter counts (Shalev et al., Table 3)."""

from __future__ import annotations

from torch import nn

from embtie.sharing.base import SharingStrategy


def model_parameter_counts(model: nn.Module, sharing_module: SharingStrategy | None = None) -> dict[str, int]:
    """{"learned", "fixed", "sharing_learned", "sharing_fixed"}: elements of trainable parameters and of
    buffers that hold fixed weights, for the whole model and for its sharing strategy alone.

    Fixed weights are the strategy's buffers (``parameter_counts()["fixed"]``); other model buffers
    (e.g. rotary tables, causal masks) are not weights and are not counted.
    """
    learned = sum(p.numel() for p in model.parameters() if p.requires_grad)
    out = {"learned": learned, "fixed": 0, "sharing_learned": 0, "sharing_fixed": 0}
    if sharing_module is not None:
        pc = sharing_module.parameter_counts()
        out.update(fixed=pc["fixed"], sharing_learned=pc["learned"], sharing_fixed=pc["fixed"])
    return out


def reduction_vs(baseline_learned: int, learned: int) -> float:
    """Relative decrease of learned parameters against a baseline (Shalev's "%" column), in [.., 1]."""
    if baseline_learned <= 0:
        raise ValueError("baseline_learned must be > 0")
    return (baseline_learned - learned) / baseline_learned
