"""An optimizer option of a comparison that reaches no parameter is refused before anything trains, and
one that reaches only part of the body says how much, once per arm.

``train.optimizer=muon`` gives Muon the weights of the body's ``nn.Linear`` layers (``embtie.training.optim``);
a body built of other modules (a Hugging Face GPT-2's Conv1D blocks, an LSTM's cells) has none, and the run
is bitwise the AdamW one under another name. The trainer refuses it when it builds the optimizer; a
comparison checks every arm first, on its model built on the meta device (no weights allocated), so that an
arm of its own (``m=tied:train.optimizer=muon``) is refused before the arms listed before it train.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from embtie import tasks
from embtie.config import RunConfig
from embtie.tasks import Task
from embtie.tasks.meta_model import build_on_meta
from embtie.training.optim import check_reach


def check_optimizer_reach(arms: Mapping[str, RunConfig]) -> None:
    """Every arm (label -> its config) whose optimizer option needs parameters of a kind reaches some (a
    one-line ConfigError naming the arm); arms of other optimizers cost nothing here."""
    built: dict[str, Task] = {}
    for label, cfg in arms.items():
        if cfg.train.optimizer != "muon":
            continue
        key = f"{cfg.task}|{cfg.data}"
        if key not in built:
            built[key] = tasks.get(cfg.task)(cfg)
        note = check_reach(build_on_meta(cfg, built[key]), cfg.train, f"the model of {label} ({cfg.model.name})")
        if note is not None:  # a partial reach is shown once per arm, before anything trains
            print(note, file=sys.stderr)
