"""An optimizer option of a comparison that reaches no parameter is refused before anything trains.

``train.optimizer=muon`` gives Muon the weights of the body's ``nn.Linear`` layers (``embtie.training.optim``);
a body built of other modules (a Hugging Face GPT-2's Conv1D blocks, an LSTM's cells) has none, and the run
is bitwise the AdamW one under another name. The trainer refuses it when it builds the optimizer; a
comparison checks every arm first, on its model built on the meta device (no weights allocated), so that an
arm of its own (``m=tied:train.optimizer=muon``) is refused before the arms listed before it train.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from embtie import tasks
from embtie.planning.model_shape import build_on_meta
from embtie.tasks import Task
from embtie.training.optim import check_reach

if TYPE_CHECKING:
    from embtie.comparison.plan import PlannedRun


def check_optimizer_reach(runs: Sequence[PlannedRun]) -> None:
    """Every arm whose optimizer option needs parameters of a kind reaches some (a one-line ConfigError
    naming the arm); arms of other optimizers cost nothing here."""
    built: dict[str, Task] = {}
    checked: set[str] = set()
    for r in runs:
        if r.cfg.train.optimizer != "muon" or r.strategy in checked:
            continue
        checked.add(r.strategy)
        key = f"{r.cfg.task}|{r.cfg.data}"
        if key not in built:
            built[key] = tasks.get(r.cfg.task)(r.cfg)
        model = build_on_meta(r.cfg, built[key])
        check_reach(model, r.cfg.train, f"the model of {r.strategy} ({r.cfg.model.name})")
