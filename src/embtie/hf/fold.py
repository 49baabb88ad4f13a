"""Folding a sharing strategy into the plain tensors a stock transformers model holds: one input table and
one linear output layer (weight, optional bias).

Every strategy's step is, in canonical form (``embtie.sharing.head``),

    input  x_i = embed(i)                      (V, d) rows: ``input_vectors()``
    logits z   = cap( W_eff . g(h) + b )       W_eff (V, d_t) with every scale folded in

so a strategy folds exactly when the transform ``g`` is affine, g(h) = h A + c: then
z = cap(h (W_eff A^T)^T + (W_eff c + b)). The soft cap is returned beside the tensors; only families whose
stock model applies it after its output layer (Gemma 2/3) can hold it (``embtie.hf.export`` decides).
Whether ``g`` is affine is found by probing it (in float64),
not by the strategy's name, so a new strategy folds or is refused without changes here. The result is
checked against the strategy's own ``embed`` and ``logits`` before it is returned.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import Tensor

from embtie.errors import ConfigError
from embtie.sharing.base import SharingStrategy
from embtie.sharing.head import apply_softcap

PROBE_TOKENS = 16
"""Random hidden states (and token ids) the folded tensors are checked on."""
AFFINE_TOL = 1e-9
"""Relative float64 tolerance for "g is affine" and for the final check against the strategy."""


class NotFoldableError(ConfigError):
    """The strategy (with these options) computes something a stock model's layers cannot express."""


@dataclass
class Folded:
    """A strategy as plain float64 tensors: what a stock model needs to compute the same embeddings and logits."""

    input_vectors: Tensor
    """(V, d) the vector the model sees for each token, every input-side scale applied."""
    weight: Tensor
    """(V, d) the output layer: logits = h @ weight.T + bias."""
    bias: Tensor | None
    """(V,) the output bias, or None where it is exactly zero."""
    notes: list[str] = field(default_factory=list)
    """What was folded, one line each (for the user)."""
    softcap: float | None = None
    """c of logits <- c tanh(z / c) after the output layer, or None (no cap)."""


def _affine_map(probe: SharingStrategy) -> tuple[Tensor, Tensor] | None:
    """(A (d, d_t), c (d_t,)) with transform(h) = h @ A + c for every h, or None when transform is the
    identity; a NotFoldableError when it is not affine. ``probe`` is a float64 copy in eval mode."""
    if type(probe).transform is SharingStrategy.transform:
        return None
    d = probe.dim
    zero = probe.transform(torch.zeros(1, d, dtype=torch.float64))[0]
    a = probe.transform(torch.eye(d, dtype=torch.float64)) - zero
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(PROBE_TOKENS, d, generator=gen, dtype=torch.float64) * 3.0
    expected = h @ a + zero
    got = probe.transform(h)
    if (got - expected).abs().max() > AFFINE_TOL * (1.0 + expected.abs().max()):
        normalizes = (probe.transform(h * 2.0) - got).abs().max() <= AFFINE_TOL * (1.0 + got.abs().max())
        what = "it normalizes h, as nGPT does" if normalizes else "an activation or a norm"
        raise NotFoldableError(
            f"strategy {probe.name!r} applies a non-linear transform to h before the output layer ({what}); "
            "a stock lm_head is one linear layer, so this cannot be exported; use a strategy or options "
            "whose transform is linear"
        )
    return a, zero


def _check(probe: SharingStrategy, folded: Folded) -> None:
    """The folded tensors give the strategy's own embeddings and logits (float64, random inputs)."""
    gen = torch.Generator().manual_seed(1)
    h = torch.randn(PROBE_TOKENS, probe.dim, generator=gen, dtype=torch.float64)
    ids = torch.randint(0, probe.vocab_size, (PROBE_TOKENS,), generator=gen)
    z = apply_softcap(h @ folded.weight.T + (0.0 if folded.bias is None else folded.bias), folded.softcap)
    ref_z, ref_x = probe.logits(h), probe.embed(ids)
    for what, got, ref in (("logits", z, ref_z), ("input embeddings", folded.input_vectors[ids], ref_x)):
        if (got - ref).abs().max() > AFFINE_TOL * (1.0 + ref.abs().max()):
            raise NotFoldableError(
                f"strategy {probe.name!r} computes its {what} in a way embtie.hf.export cannot fold into "
                "plain tensors; it cannot be exported to stock transformers weights"
            )


def fold(sharing: SharingStrategy) -> Folded:
    """The input table, output layer (float64) and soft cap that reproduce ``sharing``; NotFoldableError (one
    line: why, and what to change) when no plain embedding + linear layer (+ cap) can."""
    if sharing.softcap is not None and sharing.cap_shape.form != "tanh":
        raise NotFoldableError(
            f"strategy {sharing.name!r} caps its logits with a {sharing.cap_shape.form} soft-cap; stock transformers "
            "applies only the tanh cap (gemma2/gemma3's final_logit_softcapping), so this cannot be exported; "
            "train with softcap_form=tanh, or without softcap"
        )
    probe = copy.deepcopy(sharing).to(torch.float64).eval()
    with torch.no_grad():
        head = probe.head()
        weight = head.effective_weight()
        bias = head.full_bias()
        notes = [f"output layer = the effective output matrix of {sharing.name!r} (every scale folded in)"]
        affine = _affine_map(probe)
        if affine is not None:
            a, c = affine
            shift = weight @ c
            weight = weight @ a.T
            if bool(shift.ne(0).any()):
                bias = shift if bias is None else bias + shift
            notes.append("the linear transform of h before the output layer folded into the output matrix")
        if bias is not None and not bool(bias.ne(0).any()):
            bias = None
        folded = Folded(probe.input_vectors().detach(), weight.detach().contiguous(), bias, notes, head.softcap)
        _check(probe, folded)
    return folded
