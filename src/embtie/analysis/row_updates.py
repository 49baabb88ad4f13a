"""How often each input row and each output row receives a non-zero gradient (Press & Wolf's update
dynamics: in an untied model an input row is updated only when its word occurs in the batch, an output
row at every step; a tied row gets both).

The two paths are separated exactly, in one forward pass per batch: ``sharing.embed`` is wrapped so
that the model receives a detached copy of the input vectors. The gradient of the loss with respect to
the strategy's parameters is then the *output-path* gradient (through the head, the logits and the
regulariser) alone, and the gradient with respect to the detached copy, pushed back through the
recorded embedding lookup, is the *input-path* gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from embtie.sharing.base import SharingStrategy


def row_parameters(sharing_module: SharingStrategy) -> list[tuple[str, nn.Parameter]]:
    """Learned parameters of the strategy with one row (or entry) per token: leading dimension V."""
    v = sharing_module.vocab_size
    return [
        (n, p) for n, p in sharing_module.named_parameters() if p.requires_grad and p.dim() >= 1 and p.shape[0] == v
    ]


@contextmanager
def _detached_embed(sharing_module: SharingStrategy, record: list[tuple[Tensor, Tensor]]) -> Iterator[None]:
    original = sharing_module.embed

    def embed(ids: Tensor) -> Tensor:
        x = original(ids)
        leaf = x.detach().requires_grad_(True)
        record.append((x, leaf))
        return leaf

    sharing_module.embed = embed  # type: ignore[method-assign]  # an instance attribute, deleted below
    try:
        yield
    finally:
        del sharing_module.embed


def split_row_gradients(
    sharing_module: SharingStrategy, loss_fn: Callable[[Any], Tensor], batch: Any
) -> dict[str, dict[str, Tensor]]:
    """{"input": {param: grad}, "output": {param: grad}} of one batch for every row parameter.

    ``loss_fn(batch)`` must run the model (which calls ``sharing_module.embed``) and return the scalar
    training loss. Gradients are zero tensors where a path does not reach a parameter.
    """
    params = row_parameters(sharing_module)
    if not params:  # e.g. adaptive's per-cluster tables: no parameter has one row per token
        return {"input": {}, "output": {}}
    record: list[tuple[Tensor, Tensor]] = []
    with _detached_embed(sharing_module, record):
        loss = loss_fn(batch)
    leaves = [leaf for _, leaf in record]
    tensors: list[Tensor] = [p for _, p in params]
    grads = torch.autograd.grad(loss, leaves + tensors, allow_unused=True)
    g_leaves, g_out = grads[: len(leaves)], grads[len(leaves) :]
    used = [(x, g) for (x, _), g in zip(record, g_leaves) if g is not None and x.requires_grad]
    g_in: tuple[Tensor | None, ...]
    if used:
        g_in = torch.autograd.grad([x for x, _ in used], tensors, grad_outputs=[g for _, g in used], allow_unused=True)
    else:
        g_in = (None,) * len(tensors)

    def full(gs: tuple[Tensor | None, ...]) -> dict[str, Tensor]:
        return {n: (torch.zeros_like(p) if g is None else g) for (n, p), g in zip(params, gs)}

    return {"input": full(g_in), "output": full(g_out)}


def nonzero_rows(grads: dict[str, Tensor], vocab_size: int, tol: float = 0.0) -> Tensor:
    """(V,) bool: rows where any of the given row-parameter gradients has an entry with |g| > tol."""
    hit = torch.zeros(vocab_size, dtype=torch.bool)
    for g in grads.values():
        hit |= (g.detach().abs().reshape(vocab_size, -1) > tol).any(dim=1).cpu()
    return hit


def row_update_counts(
    sharing_module: SharingStrategy, loss_fn: Callable[[Any], Tensor], batches: Iterable[Any], tol: float = 0.0
) -> dict[str, Any]:
    """Count, over ``batches``, how many batches give each row a non-zero input- / output-path gradient.

    Returns {"batches": n, "input_counts": (V,) int array, "output_counts": (V,) int array,
    "input_rows_per_batch": mean fraction of the V rows touched per batch through the input path,
    "output_rows_per_batch": same for the output path, "parameters": names of the row parameters}.
    Parameters' .grad fields are left untouched.
    """
    v = sharing_module.vocab_size
    cin = np.zeros(v, dtype=np.int64)
    cout = np.zeros(v, dtype=np.int64)
    n = 0
    for batch in batches:
        g = split_row_gradients(sharing_module, loss_fn, batch)
        cin += nonzero_rows(g["input"], v, tol).numpy()
        cout += nonzero_rows(g["output"], v, tol).numpy()
        n += 1
    if n == 0:
        raise ValueError("row_update_counts needs at least one batch")
    return {
        "batches": n,
        "input_counts": cin,
        "output_counts": cout,
        "input_rows_per_batch": float(cin.sum() / (n * v)),
        "output_rows_per_batch": float(cout.sum() / (n * v)),
        "parameters": [name for name, _ in row_parameters(sharing_module)],
    }
