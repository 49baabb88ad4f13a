"""A plain-dict registry of sharing strategies by name, and their options: each is a keyword-only
parameter of a strategy's constructor (type and default) declared in the class's ``declared_options``
(meaning and range, an ``embtie.schema.Setting``)."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from embtie.errors import ConfigError
from embtie.schema import Setting, check, did_you_mean

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
        hint = did_you_mean(name, _REGISTRY)
        raise ConfigError(f"unknown strategy {name!r}{hint}; choose one of: {', '.join(_REGISTRY)}") from None


@dataclass(frozen=True)
class Option:
    """One keyword option of a strategy: its type and default (from the constructor's signature) and its
    declaration (``declared_options`` of the class that declares it, or of a base class)."""

    name: str
    type: Any
    default: Any
    setting: Setting
    owner: type
    """the most derived class whose constructor takes the option (where its default comes from)."""

    def check(self, value: Any, key: str) -> Any:
        return check(value, self.type, key, self.setting, default=self.default)


def options(name: str) -> dict[str, Option]:
    """The keyword options strategy ``name`` accepts (its own and the common ones), in signature order."""
    cls = get(name)
    if cls not in _OPTIONS:
        _OPTIONS[cls] = _read_options(cls)
    return dict(_OPTIONS[cls])


_OPTIONS: dict[type, dict[str, Option]] = {}


def _read_options(cls: type) -> dict[str, Option]:
    found: dict[str, Option] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = [p for p in inspect.signature(init).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        hints = typing.get_type_hints(init) if params else {}
        for p in params:
            if p.name not in found:
                found[p.name] = Option(p.name, hints.get(p.name, Any), p.default, _declaration(cls, p.name), klass)
    return found


def _declaration(cls: type, option: str) -> Setting:
    """The ``Setting`` of ``option``: from the first class of ``cls``'s MRO that declares it."""
    for klass in cls.__mro__:
        declared = klass.__dict__.get("declared_options", {})
        if option in declared:
            setting: Setting = declared[option]
            return setting
    return Setting()


def accepted_options(name: str) -> list[str]:
    """Keyword options the strategy ``name`` accepts (its own and the common ones)."""
    return list(options(name))


def check_options(name: str, values: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``values`` converted and checked by the declarations of strategy ``name``'s options (a number spelled
    as text becomes that number); a ConfigError for an unknown option or a value out of range. ``where``
    prefixes the keys in messages (``sharing.options.``; none: ``option z_loss=...``)."""
    valid = options(name)
    for k in values:
        if k not in valid:
            raise ConfigError(
                f"unknown option '{where}{k}' for strategy {name!r}{did_you_mean(k, valid)}; "
                f"valid options: {', '.join(sorted(valid))}"
            )
    return {k: valid[k].check(v, f"{where}{k}" if where else f"option {k}") for k, v in values.items()}


def build(name: str, vocab_size: int, dim: int, **options: Any) -> SharingStrategy:
    """Build the strategy ``name`` for a vocabulary of ``vocab_size`` tokens and model width ``dim``.

    Unknown options are refused with the list of valid ones; values are checked by the options'
    declarations (``check_options``), then by the strategy (rules that involve ``dim`` or other options).
    """
    return get(name)(vocab_size, dim, **check_options(name, options))
