"""``TrainLog``: the running training loss between log records, the records of metrics.jsonl and the
progress bar. The loss is summed on the device (no host sync per step) and reduced over processes
only when a record is written."""

from __future__ import annotations

import math
from typing import Any

import torch
from tqdm import tqdm

from embtie import runtime
from embtie.evaluation.loss_meter import perplexity
from embtie.training.metrics_log import MetricsLog
from embtie.training.state import TrainState


class TrainLog:
    """The window since the last train record (summed NLL, tokens, training seconds) and its output."""

    def __init__(self, metrics: MetricsLog, state: TrainState, rt: runtime.Runtime, bar: tqdm) -> None:
        self.metrics = metrics
        self.rt = rt
        self.bar = bar
        self.nll = torch.tensor(state.log_nll, dtype=torch.float64, device=rt.device)
        self.tokens = state.log_tokens
        self.time = state.log_time

    def add(self, ce: torch.Tensor, tokens: int) -> None:
        """Book one step: ``ce`` the mean cross-entropy over its ``tokens`` target tokens (this process)."""
        self.nll += ce.detach().double() * tokens
        self.tokens += tokens

    def first_step(self, ce: torch.Tensor, tokens: int, lr: float, elapsed: float) -> float:
        """The step-0 record (loss before any update, all processes); returns that loss."""
        nll0, tok0 = runtime.all_reduce_sum([float(ce) * tokens, float(tokens)], self.rt)
        loss = nll0 / tok0
        self.metrics.write({"step": 0, "split": "train", "loss": loss, "ppl": perplexity(nll0, int(tok0)),
                            "lr": lr, "tokens_per_s": None, "elapsed": elapsed})  # fmt: skip
        return loss

    def flush(self, step: int, steps_per_epoch: int, lr: float, elapsed: float) -> float:
        """Write the train record of the window ending at ``step`` and start a new window; returns its loss."""
        nll, toks = runtime.all_reduce_sum([float(self.nll), float(self.tokens)], self.rt)
        loss = nll / toks
        tps = toks / self.time if self.time > 0 else None
        self.metrics.write({"step": step, "split": "train", "epoch": round(step / steps_per_epoch, 4), "loss": loss,
                            "ppl": perplexity(nll, int(toks)), "lr": lr, "tokens_per_s": tps,
                            "elapsed": elapsed})  # fmt: skip
        self.bar.set_postfix(loss=f"{loss:.3f}", ppl=f"{math.exp(min(loss, 700)):.1f}", tok_s=f"{tps or 0:.0f}")
        self.nll.zero_()
        self.tokens, self.time = 0, 0.0
        return loss

    def valid(self, step: int, res: dict[str, Any], elapsed: float) -> None:
        """The record of a validation at ``step`` (rank 0's result; metrics beyond the loss, e.g. bleu, too)."""
        extra = {k: v for k, v in res.items() if k not in ("step", "full", "loss", "ppl", "tokens")}
        self.metrics.write({"step": step, "split": "valid", "loss": res["loss"], "ppl": res["ppl"],
                            "tokens": res["tokens"], **extra, "elapsed": elapsed})  # fmt: skip

    def save_into(self, state: TrainState) -> None:
        """Copy the open window into ``state`` (for a checkpoint), so that a resume continues it."""
        state.log_nll, state.log_tokens, state.log_time = float(self.nll), self.tokens, self.time
        state.metrics_offset = self.metrics.offset()

    def close(self) -> None:
        self.bar.close()
        self.metrics.close()
