"""Tasks by name (``task:`` in a config): each knows its data config, builds its model, yields
batches, computes the loss and evaluates. See ``embtie.tasks.base.Task``.

Add a task: subclass Task in a module here, decorate it with ``embtie.tasks.registry.register``,
import it below.
"""

from __future__ import annotations

from embtie.tasks import captioning, lm, translation  # noqa: F401  (registers "captioning", "lm", "translation")
from embtie.tasks.base import StepLoss, Task
from embtie.tasks.registry import data_config_class, get, names, register

__all__ = ["StepLoss", "Task", "data_config_class", "get", "names", "register"]
