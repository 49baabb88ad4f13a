"""Tasks by name (``task:`` in a config): each knows its data config, builds its model, yields
batches, computes the loss and evaluates. See ``embtie.tasks.base.Task``.

Add a task: subclass ``Task[ModelKind]`` in a package here (its data config, data, evaluation and the
task class), decorate it with ``embtie.tasks.registry.register``, and import it below. The model is
built by ``embtie.tasks.model_building`` from the task's ``output_vocab_size()`` and, where the model
takes more than (config, sharing object), ``model_arguments()``. What a task can do beyond training
and perplexity is declared by inheriting ``embtie.tasks.capabilities``' classes.
"""

from __future__ import annotations

from embtie.tasks import captioning, lm, translation  # noqa: F401  (registers "captioning", "lm", "translation")
from embtie.tasks.base import StepLoss, Task, TrainingText
from embtie.tasks.registry import data_config_class, get, names, register

__all__ = ["StepLoss", "Task", "TrainingText", "data_config_class", "get", "names", "register"]
