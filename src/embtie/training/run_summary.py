"""The summary of a finished run (RUN_DIR/summary.json)."""

from __future__ import annotations

from typing import Any

from embtie import runtime, seeding
from embtie.analysis.param_counts import ParameterCounts
from embtie.config import RunConfig
from embtie.training.numerics import numerics
from embtie.training.state import TrainState


def summary_record(
    cfg: RunConfig,
    state: TrainState,
    counts: ParameterCounts,
    steps: int,
    steps_per_epoch: int,
    elapsed: float,
    rt: runtime.Runtime,
) -> dict[str, Any]:
    """The summary of a run of ``steps`` steps whose final validation is ``state.last_eval``."""
    last = state.last_eval
    assert last is not None
    tokens_per_s = state.tokens_seen / state.train_time if state.train_time > 0 else None
    return {
        "task": cfg.task,
        "model": cfg.model.name,
        "strategy": cfg.sharing.name,
        "valid_loss": last["loss"],
        "valid_ppl": last["ppl"],
        **({"valid_bpb": last["bpb"]} if "bpb" in last else {}),
        "best_valid_ppl": state.best_valid_ppl,
        "best_valid_step": state.best_valid_step,
        "step0_loss": state.step0_loss,
        "train_loss": state.last_train_loss,
        **counts.summary_fields(),
        "tokens_per_s": tokens_per_s,
        "tokens_seen": state.tokens_seen,
        "steps": steps,
        "epochs": steps / steps_per_epoch,
        "train_time_s": state.train_time,
        "elapsed_s": elapsed,
        "nonfinite_skipped": state.nonfinite_skipped,
        "monitor": cfg.train.monitor,
        "best_metric": state.best_metric,
        "best_metric_step": state.best_metric_step,
        "stopped_early": state.stopped_early,
        "world_size": rt.world_size,
        "device": str(rt.device),
        "seeding": seeding.SCHEME,
        "numerics": numerics(rt.device),
        "finished": True,
    }
