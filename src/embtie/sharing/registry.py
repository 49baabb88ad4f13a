"""A plain-dict registry of sharing strategies by name."""

from __future__ import annotations

import difflib
import inspect
from typing import TYPE_CHECKING, Any

from embtie.errors import ConfigError

if TYPE_CHECKING:
    from embtie.sharing.base import SharingStrategy

_REGISTRY: dict[str, type[SharingStrategy]] = {}


def register(cls: type[SharingStrategy]) -> type[SharingStrategy]:
    """Class decorator: make a strategy buildable by its ``name``."""
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise TypeError(f"strategy name {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def names() -> list[str]:
    """Registered strategy names, in registration order."""
    return list(_REGISTRY)


def get(name: str) -> type[SharingStrategy]:
    """The class registered under ``name``; a ConfigError listing the valid names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), list(_REGISTRY), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown strategy {name!r}{hint}; choose one of: {', '.join(_REGISTRY)}") from None


def accepted_options(name: str) -> list[str]:
    """Keyword options the strategy ``name`` accepts (its own and the common ones)."""
    cls = get(name)
    opts: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in opts:
                opts.append(p.name)
    return opts


def build(name: str, vocab_size: int, dim: int, **options: Any) -> SharingStrategy:
    """Build the strategy ``name`` for a vocabulary of ``vocab_size`` tokens and model width ``dim``.

    Unknown options are refused with the list of valid ones; values are validated by the strategy.
    """
    valid = accepted_options(name)
    unknown = [k for k in options if k not in valid]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), valid, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"unknown option {unknown[0]!r} for strategy {name!r}{hint}; valid options: {', '.join(sorted(valid))}"
        )
    return get(name)(vocab_size, dim, **options)
