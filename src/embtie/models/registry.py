"""Models by name: each entry pairs a config dataclass (with a ``name`` field) with a model class
whose constructor is ``Model(config, sharing)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from embtie.errors import ConfigError

_MODELS: dict[str, tuple[type, type[nn.Module]]] = {}


def register(name: str, config_cls: type) -> Callable[[type[nn.Module]], type[nn.Module]]:
    """Class decorator: ``@register("gpt", GPTConfig)`` makes ``model.name: gpt`` buildable."""

    def deco(cls: type[nn.Module]) -> type[nn.Module]:
        if name in _MODELS and _MODELS[name][1] is not cls:
            raise TypeError(f"model name {name!r} registered twice")
        _MODELS[name] = (config_cls, cls)
        return cls

    return deco


def names() -> list[str]:
    return list(_MODELS)


def config_class(name: str) -> type:
    """The config dataclass of model ``name``; a ConfigError listing the valid names otherwise."""
    try:
        return _MODELS[name][0]
    except KeyError:
        raise ConfigError(f"unknown model {name!r}; choose one of: {', '.join(_MODELS)}") from None


def model_class(name: str) -> type[nn.Module]:
    config_class(name)
    return _MODELS[name][1]


def build(config: Any, sharing: nn.Module) -> nn.Module:
    """``Model(config, sharing)`` for the model named ``config.name``."""
    return model_class(config.name)(config, sharing)
