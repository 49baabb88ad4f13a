"""Which stored tensors of a sharing strategy a quantized deployment keeps in integers, and a model
evaluated with them fake-quantized (``embtie.analysis.quantization``), one role at a time or both.

The two roles, always the tensors **as the strategy stores them** (what a deployment ships):

- **input**: the embedding table E the lookup reads, ``strategy.weight`` (V, d) (the factor A (V, r) when
  the table is factorized; the small factor B stays in full precision);
- **output**: the matrix W of the strategy's canonical head (``Head.weight``, (V, d_t)): E itself for the
  tied family (tied, l2norm, sqnorm, cosine, distance, nGPT, tied-proj, ...), the separate O of untied
  (and of tie-untie once untied), the fixed targets T of fixed/hadamard.

A **shared** matrix (the head's W is E) is quantized once and the same dequantized tensor serves both
roles, as tied deployments do. Whatever a strategy derives from the stored matrix at run time is derived
from the quantized one: l2norm's unit rows and 1/||e_i|| scales, sqnorm's 1/||e_i||^2, distance's
-||e_i||^2/2. Learned vectors and scalars (a bias, nGPT's per-token scale, the logit scale), projections
(tied-proj's P, a fixed head's map) and the model body stay in full precision. Adaptive softmax keeps
per-cluster tables, not one stored matrix, and is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from torch import Tensor

from embtie.analysis.quantization import fake_quantize
from embtie.errors import ConfigError
from embtie.sharing.base import SharingStrategy
from embtie.sharing.head import Head

TABLES = ("input", "output", "both")
"""which roles are quantized: the input table alone, the output matrix alone, or both."""


@dataclass(frozen=True)
class StoredTables:
    """The names of the tensors each role reads (attributes of the strategy) and whether they are one."""

    input: str
    output: str
    shared: bool


def _output_tensor(strategy: SharingStrategy) -> Tensor:
    return strategy.head().weight


def stored_tables(strategy: SharingStrategy) -> StoredTables:
    """The stored tensors of the two roles (a ConfigError when the strategy has no flat table, or when its
    head's matrix is computed rather than stored)."""
    if not strategy.flat_table:
        raise ConfigError(
            f"strategy {strategy.name!r} keeps per-cluster tables, not one (V, d) matrix; quantization "
            "sensitivity is measured for strategies with one flat table"
        )
    w = _output_tensor(strategy)
    named = [*strategy.named_parameters(), *strategy.named_buffers()]
    names = [n for n, t in named if t is w]
    if not names:
        raise ConfigError(
            f"strategy {strategy.name!r} computes its output matrix instead of storing it; there is no stored "
            "table to quantize"
        )
    return StoredTables(input="weight", output=names[0], shared=w is strategy.weight)


@dataclass(frozen=True)
class Applied:
    """The dequantized tensors the two roles read while ``quantized`` is active (None: full precision)."""

    input: Tensor | None
    output: Tensor | None


def quantized_roles(strategy: SharingStrategy, fmt: str, tables: str) -> Applied:
    """The dequantized tensors ``quantized`` gives each role: the shared matrix is quantized once."""
    if tables not in TABLES:
        raise ConfigError(f"tables {tables!r} is not one of {', '.join(TABLES)}")
    shared = stored_tables(strategy).shared
    q_in = fake_quantize(strategy.weight, fmt) if tables in ("input", "both") else None
    q_out = None
    if tables in ("output", "both"):
        q_out = q_in if shared and q_in is not None else fake_quantize(_output_tensor(strategy), fmt)
    return Applied(input=q_in, output=q_out)


@contextmanager
def quantized(strategy: SharingStrategy, fmt: str, tables: str) -> Iterator[Applied]:
    """While active, ``strategy.embed`` reads the quantized input table and ``strategy.head()`` (hence
    ``loss``, ``logits``) the quantized output matrix, for the roles ``tables`` names; the stored
    parameters are the same before and after. For evaluation (no gradient flows to the stand-ins)."""
    applied = quantized_roles(strategy, fmt, tables)
    embed, head, stored = strategy.embed, strategy.head, _output_tensor(strategy)

    def quantized_embed(ids: Tensor) -> Tensor:
        """(...,) ids -> (..., d), the lookup reading the dequantized table in place of E."""
        kept = strategy.weight.data
        strategy.weight.data = applied.input  # type: ignore[assignment]  # set when this wrapper is
        try:
            return embed(ids)
        finally:
            strategy.weight.data = kept

    def quantized_head() -> Head:
        h = head()
        if h.weight is not stored:  # tie-untie switches matrices between steps, never inside an evaluation
            raise RuntimeError(f"strategy {strategy.name!r} changed its output matrix during a quantized evaluation")
        return dataclasses.replace(h, weight=applied.output, structured=None)  # type: ignore[arg-type]

    # instance attributes, deleted below (the pattern of embtie.analysis.eval_units.recording_loss)
    if applied.input is not None:
        strategy.embed = quantized_embed  # type: ignore[method-assign]
    if applied.output is not None:
        strategy.head = quantized_head  # type: ignore[method-assign]
    try:
        yield applied
    finally:
        strategy.__dict__.pop("embed", None)
        strategy.__dict__.pop("head", None)
