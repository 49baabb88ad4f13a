"""Records that are written to and read from JSON objects key for key.

A record is a dataclass whose fields, in order, are the keys of its JSON object, so a file read into
records and written back gives the same text: reports drawn from saved files do not change when the
records that carry them do. Field types drive the reading (nested records, lists and dicts of them,
``X | None``); values are never converted, so an integer stays an integer and a float a float.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Self, TypeAlias

import numpy as np

from embtie.errors import DataError

JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]

EXTRA = "extra"
"""a field of this name (a dict) keeps the keys its record does not declare, written after the others;
for objects whose keys are another component's to choose (a task's scores)."""


def optional() -> Any:
    """A field that is None when its key is absent and whose key is left out when it is None: for keys
    that current code always writes but that files of older code may lack."""
    return dataclasses.field(default=None, metadata={"omit_none": True})


class Record:
    """Base class of the JSON records (each subclass is a dataclass)."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object: the fields in order (``optional()`` ones only when set), then ``extra``."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name == EXTRA:
                out.update(value)
            elif value is not None or not f.metadata.get("omit_none"):
                out[f.name] = _encode(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The record of a JSON object; keys it does not declare are dropped (or kept in ``extra``)."""
        if not isinstance(data, Mapping):
            raise DataError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        hints = _hints(cls)
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        kwargs = {n: _decode(hints[n], data[n]) for n in names if n in data and n != EXTRA}
        if EXTRA in names:
            kwargs[EXTRA] = {k: v for k, v in data.items() if k not in names}
        try:
            return cls(**kwargs)
        except TypeError as e:  # a required key is missing
            raise DataError(f"{cls.__name__}: {e}") from None


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of a record class (resolved once per class)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _encode(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(tp: Any, value: Any) -> Any:
    """``value`` read as type ``tp``: records and containers of records are built, the rest passes as is."""
    if value is None:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _decode(inner[0], value) if len(inner) == 1 else value
    if origin is dict:
        return {k: _decode(args[1], v) for k, v in value.items()}
    if origin is list:
        return [_decode(args[0], v) for v in value]
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_json(value)
    return value


def json_default(o: Any) -> Any:
    """``json.dumps``' fallback for the numpy values that records and statistics hold."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Record):
        return o.to_json()
    raise TypeError(f"not JSON serialisable: {type(o)}")
