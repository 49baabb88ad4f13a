"""Tasks by name (``task:`` in a config): each knows its data config, builds its model, yields
batches, computes the loss and evaluates. See ``embtie.tasks.base.Task``.

Add a task: subclass Task in a module here, decorate it with ``@register``, import it below.
"""

from __future__ import annotations

from embtie.errors import ConfigError
from embtie.tasks.base import StepLoss, Task

_TASKS: dict[str, type[Task]] = {}


def register(cls: type[Task]) -> type[Task]:
    """Class decorator: make a task available by its ``name``."""
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no name")
    _TASKS[cls.name] = cls
    return cls


def names() -> list[str]:
    return list(_TASKS)


def get(name: str) -> type[Task]:
    try:
        return _TASKS[name]
    except KeyError:
        raise ConfigError(f"unknown task {name!r}; choose one of: {', '.join(_TASKS)}") from None


def data_config_class(name: str) -> type:
    return get(name).data_config


from embtie.tasks import lm, translation  # noqa: E402, F401  (registers "lm", "translation")

__all__ = ["StepLoss", "Task", "data_config_class", "get", "names", "register"]
