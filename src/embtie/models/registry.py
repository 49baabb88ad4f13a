"""Models by name: each entry pairs a config dataclass (a ``ModelConfig`` with a ``name`` field) with a
model class whose constructor is ``Model(config, sharing)`` (translation models also take ``src_embed``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from torch import nn

from embtie.errors import ConfigError
from embtie.models.base import ModelConfig
from embtie.sharing.base import SharingStrategy

_MODELS: dict[str, tuple[type[ModelConfig], type[nn.Module]]] = {}

M = TypeVar("M", bound=type[nn.Module])


def register(name: str, config_cls: type[ModelConfig]) -> Callable[[M], M]:
    """Class decorator: ``@register("gpt", GPTConfig)`` makes ``model.name: gpt`` buildable."""
    if not issubclass(config_cls, ModelConfig):
        raise TypeError(f"the config of model {name!r} must subclass embtie.models.base.ModelConfig")

    def deco(cls: M) -> M:
        if name in _MODELS and _MODELS[name][1] is not cls:
            raise TypeError(f"model name {name!r} registered twice")
        _MODELS[name] = (config_cls, cls)
        return cls

    return deco


def names() -> list[str]:
    return list(_MODELS)


def config_class(name: str) -> type[ModelConfig]:
    """The config dataclass of model ``name``; a ConfigError listing the valid names otherwise."""
    try:
        return _MODELS[name][0]
    except KeyError:
        raise ConfigError(f"unknown model {name!r}; choose one of: {', '.join(_MODELS)}") from None


def model_class(name: str) -> type[nn.Module]:
    config_class(name)
    return _MODELS[name][1]


def build(config: ModelConfig, sharing: SharingStrategy, **extra: Any) -> nn.Module:
    """``Model(config, sharing, **extra)`` for the model named ``config.name``."""
    return model_class(config.name)(config, sharing, **extra)
