"""Model selection on a validation metric: the best value so far, the ``plateau`` learning-rate
schedule and early stopping, all kept in ``TrainState`` so that a resumed run continues them exactly.

``train.monitor`` names the metric (``loss``: lower is better; ``bleu``: higher is better). A
validation that does not improve on the best counts as bad; the ``plateau`` schedule multiplies the
learning rate by ``decay_factor`` after every ``plateau_patience`` bad validations in a row (as
PyTorch's ReduceLROnPlateau without cooldown), and ``early_stop=N`` ends training after N in a row.
"""

from __future__ import annotations

from dataclasses import dataclass

from embtie.config import TrainConfig
from embtie.training.state import TrainState


@dataclass(frozen=True)
class Decision:
    improved: bool
    """the value is the best so far (the best checkpoint is replaced)."""
    decayed: bool
    """the plateau schedule lowered the learning rate."""
    stop: bool
    """early stopping ends training now."""


def selects_models(tc: TrainConfig) -> bool:
    """Whether the run keeps a best checkpoint (early stopping, a plateau schedule or a non-loss monitor)."""
    return tc.early_stop > 0 or tc.schedule == "plateau" or tc.monitor != "loss"


def better(value: float, best: float | None, monitor: str) -> bool:
    if best is None:
        return True
    return value > best if monitor == "bleu" else value < best


def update(state: TrainState, value: float, step: int, tc: TrainConfig) -> Decision:
    """Book the validation ``value`` of ``step`` in ``state`` and return what follows from it."""
    improved = better(value, state.best_metric, tc.monitor)
    if improved:
        state.best_metric, state.best_metric_step, state.bad_validations = value, step, 0
    else:
        state.bad_validations += 1
    decayed = tc.schedule == "plateau" and not improved and state.bad_validations % tc.plateau_patience == 0
    if decayed:
        state.lr_scale *= tc.decay_factor
    stop = tc.early_stop > 0 and state.bad_validations >= tc.early_stop
    state.stopped_early = state.stopped_early or stop
    return Decision(improved=improved, decayed=decayed, stop=stop)
