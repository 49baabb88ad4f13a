"""Tasks by name (``task:`` in a config).

``@register`` makes a ``Task`` subclass available by its ``name`` and tells ``embtie.config`` which
dataclass reads that task's ``data`` section (and which cross-section checks to run: the monitored
metric, the kind of model, the task's own ``check_config``), so the config module never imports a task.
"""

from __future__ import annotations

from typing import Any, TypeVar

from embtie import config
from embtie.errors import ConfigError
from embtie.tasks.base import Task

_TASKS: dict[str, type[Task[Any]]] = {}

T = TypeVar("T", bound=type[Task[Any]])


def register(cls: T) -> T:
    """Class decorator: make a task available by its ``name``."""
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no name")
    _TASKS[cls.name] = cls

    def check(cfg: config.RunConfig) -> None:
        if cfg.train.monitor not in cls.metrics:
            raise ConfigError(
                f"train.monitor={cfg.train.monitor} is not a validation metric of task {cls.name!r}; "
                f"choose one of: {', '.join(cls.metrics)}"
            )
        cls.check_model(cfg)
        cls.check_config(cfg)

    config.register_task_section(cls.name, cls.data_config, check)
    return cls


def names() -> list[str]:
    return list(_TASKS)


def get(name: str) -> type[Task[Any]]:
    try:
        return _TASKS[name]
    except KeyError:
        raise ConfigError(f"unknown task {name!r}; choose one of: {', '.join(_TASKS)}") from None


def data_config_class(name: str) -> type:
    return get(name).data_config
