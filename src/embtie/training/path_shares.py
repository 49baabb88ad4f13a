"""How much of each vocabulary row's gradient comes through the output layer, over training (Press & Wolf).

Press & Wolf argue that in a tied model "the update is mostly affected by the output embedding": every
row gets an output-path gradient at every step, but an input-path gradient only when its word occurs.
``PathShareProbe`` measures that during training. At every validation (``train.path_probe: N``) it
takes the same N training batches (the first ones of epoch 0), splits the gradient of the loss with
respect to the strategy's row parameters exactly into its input and output paths
(``embtie.analysis.row_updates.split_row_gradients``) with the current weights, and accumulates per row

    in_i  += ||g_in,i||,    out_i += ||g_out,i||        (sum over the row parameters' row i)

so that ``out_i / (in_i + out_i)`` is row i's output-path share of its gradient so far. Each probe also
records aggregate shares (all rows, and rows split into frequency thirds) at that step. Probing does
not change training: the random-number state is restored, no ``.grad`` is touched, and recurrent state
starts fresh. Results go to ``RUN_DIR/path_shares.npz`` (atomically; read back by
``embtie.analysis.path_share_file``); a resumed run drops probes made after its checkpoint.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from embtie import files
from embtie.analysis.path_share_file import FILE, read
from embtie.analysis.row_updates import row_parameters, split_row_gradients
from embtie.sharing.base import strategy_of

BANDS = ("frequent", "middle", "rare")
"""Frequency thirds of the vocabulary rows (by training count) in the per-probe records."""


def row_gradient_norms(grads: dict[str, torch.Tensor], vocab_size: int) -> np.ndarray:
    """(V,) float64: the L2 norm of row i over all row parameters' gradients."""
    sq = torch.zeros(vocab_size, dtype=torch.float64)
    for g in grads.values():
        sq += g.detach().double().reshape(vocab_size, -1).pow(2).sum(dim=1).cpu()
    return sq.sqrt().numpy()


def output_share(g_in: np.ndarray, g_out: np.ndarray) -> float:
    """sum(out) / sum(in + out) of per-row gradient norms (nan when both are zero)."""
    total = float(g_in.sum() + g_out.sum())
    return float(g_out.sum()) / total if total > 0 else float("nan")


def frequency_bands(counts: np.ndarray | None, vocab_size: int) -> list[np.ndarray]:
    """Row indices of the frequent, middle and rare thirds (by training count; by id when unknown)."""
    order = np.argsort(-counts, kind="stable") if counts is not None else np.arange(vocab_size)
    return [np.sort(b) for b in np.array_split(order, 3)]


class PathShareProbe:
    """Measures input- vs output-path gradient norms per row at each call (rank 0 of a run)."""

    def __init__(self, task: Any, model: nn.Module, out: Path, n_batches: int, device: torch.device) -> None:
        self.task, self.model, self.path = task, model, Path(out) / FILE
        self.sharing = strategy_of(model)
        self.v = self.sharing.vocab_size
        n = min(n_batches, task.steps_per_epoch(1))
        self.batches = [task.train_batch(0, i, 0, 1, device) for i in range(n)]
        self.device = device
        counts = task.output_token_counts()
        counts = counts if counts is not None and len(counts) == self.v else None
        self.bands = frequency_bands(counts, self.v)
        self.active = bool(row_parameters(self.sharing))
        self.cum_in = np.zeros(self.v)
        self.cum_out = np.zeros(self.v)
        self.records: list[list[float]] = []  # [step, share_all, share_frequent, share_middle, share_rare]
        self._hist_in: list[np.ndarray] = []  # cum_in after each probe
        self._hist_out: list[np.ndarray] = []

    def resume(self, step: int) -> None:
        """Continue the probes of an earlier process of this run, dropping those made after ``step``
        (the checkpoint it resumes from): the sums are those after the last probe kept."""
        if not self.path.is_file():
            return
        data = read(self.path.parent)
        kept = [i for i, r in enumerate(data["records"].tolist()) if r[0] <= step]
        self.records = [data["records"][i].tolist() for i in kept]
        self._hist_in = [data["in_hist"][i].astype(np.float64) for i in kept]
        self._hist_out = [data["out_hist"][i].astype(np.float64) for i in kept]
        if kept:
            self.cum_in, self.cum_out = self._hist_in[-1].copy(), self._hist_out[-1].copy()

    def probe(self, step: int) -> dict[str, float] | None:
        """Measure at ``step`` (the model's current weights), accumulate, write the file; the record."""
        if not self.active or (self.records and self.records[-1][0] == step):
            return None
        was = self.model.training
        self.model.train()
        g_in, g_out = np.zeros(self.v), np.zeros(self.v)
        with torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
            carry = self.task.init_carry(self.model, 0, 1, self.device)
            for batch in self.batches:
                state = {"carry": carry}

                def loss_fn(b: Any, state: dict[str, Any] = state) -> torch.Tensor:
                    out, new_carry = self.task.loss(self.model, b, state["carry"])
                    state["carry"] = new_carry
                    return out.objective

                grads = split_row_gradients(self.sharing, loss_fn, batch)
                carry = _detach(state["carry"])
                g_in += row_gradient_norms(grads["input"], self.v)
                g_out += row_gradient_norms(grads["output"], self.v)
        self.model.train(was)
        self.cum_in += g_in
        self.cum_out += g_out
        rec = [float(step), output_share(g_in, g_out)] + [output_share(g_in[b], g_out[b]) for b in self.bands]
        self.records.append(rec)
        self._hist_in.append(self.cum_in.copy())
        self._hist_out.append(self.cum_out.copy())
        self._write()
        return dict(zip(["step", "all", *BANDS], rec))

    def _write(self) -> None:
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            records=np.asarray(self.records, dtype=np.float64),
            cum_in=self.cum_in,
            cum_out=self.cum_out,
            in_hist=np.stack(self._hist_in),
            out_hist=np.stack(self._hist_out),
        )
        files.write_atomic(self.path, buf.getvalue())


def _detach(carry: Any) -> Any:
    if isinstance(carry, torch.Tensor):
        return carry.detach()
    if isinstance(carry, tuple | list):
        return type(carry)(_detach(c) for c in carry)
    return carry
