"""Declared settings: every value a user can set is declared once, and read through that declaration.

A declaration (``Setting``) gives a key's meaning (one line), its allowed range and what null means;
its type and default come from where it is declared:

- a field of a config dataclass, whose type is annotated with it
  (``lr: Annotated[float, Setting("peak learning rate (after warmup)", gt=0)] = 1e-3``; the dataclass
  inherits ``Declared``, which converts and checks every field when an instance is made);
- a keyword option of a sharing strategy's constructor (type and default from the signature, the
  ``Setting`` from the class's ``declared_options``; ``embtie.sharing.registry`` reads them);
- a number on the command line (``embtie.commands.common.number_arg``).

``check(value, type, key, setting)`` is the one validation: it converts the value to the declared type
(strings that spell a number become that number; an integral float becomes an int where an int is
declared) and checks its range, or raises a one-line ``ConfigError`` that names the key, the value and
what is allowed, e.g. ``train.lr=-0.1 must be > 0; the default is 0.001``.

``parse_number`` is the one grammar of numbers (``1e-4``, ``1E4``, ``.5``, ``inf``, ``-3``, ``1_000``) and
``parse_scalar`` the one reading of a ``key=value`` value (``train.lr=1e-4``, ``sharing.options.z_loss=1e-4``,
``LABEL=NAME:key=value`` variants, ``--option STRATEGY.KEY=VALUE``): a number when it spells one, else a
YAML scalar. YAML 1.1 reads ``1e-4`` as a string, so a YAML file's ``lr: 1e-4`` reaches ``check`` as text
and becomes a number there, where a number is declared.

This module imports nothing of embtie but ``errors``, so that every package (sharing, models, tasks,
config, commands) can declare its settings with it.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import yaml

from embtie.errors import ConfigError

# ---------------------------------------------------------------------------- numbers

_NUMBER = re.compile(
    r"[+-]?(?:(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?|inf|infinity|nan)",
    re.IGNORECASE,
)


MAX_INT = 2**31 - 1
"""the largest integer a setting takes unless its ``Setting`` gives a bound of its own: every count embtie
reads (steps, widths, tokens, seeds, GPUs) fits a 32-bit signed integer, and a number written as ``1e308``
would otherwise be read as a 309-digit integer and grow a table, a loop or a plan until the machine gives up."""


def parse_number(text: str) -> int | float | None:
    """The number ``text`` spells (``-3``, ``1_000``: int; ``1e-4``, ``1E4``, ``.5``, ``inf``: float), or None."""
    s = text.strip()
    if not _NUMBER.fullmatch(s):
        return None
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:  # misplaced underscores: 1__0, 1_.5
        return None


def parse_scalar(text: str) -> Any:
    """A ``key=value`` value: the number it spells (``parse_number``), else the YAML scalar it is
    (``true``, ``null``, ``[1, 2]``, ``sqrt_d``); text that is not valid YAML stays text; empty is ``""``."""
    number = parse_number(text)
    if number is not None:
        return number
    if not text.strip():
        return ""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def did_you_mean(word: object, choices: Sequence[object] | typing.Iterable[object]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices`` to a mistyped ``word``, or ``""``."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


# ---------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Rule:
    """A constraint that a range cannot say: ``test(value)`` must hold; ``text`` says what is allowed."""

    test: Callable[[Any], bool]
    text: str


@dataclass(frozen=True)
class Setting:
    """What a key means and which values it allows (beyond its type).

    help: one line of meaning. gt/ge/lt/le: bounds of a number (of every number of a list). Numbers
    must be finite. length/min_length: the length of a list. null: what null means, where the type
    allows it. rule: any other constraint. choices: the registry a name is looked up in (documentation
    only: the registry refuses unknown names itself).
    """

    help: str = ""
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    length: int | None = None
    min_length: int | None = None
    null: str | None = None
    rule: Rule | None = None
    choices: Callable[[], Sequence[str]] | None = None

    def bounds(self) -> str:
        """``> 0``, ``>= 1``, ``in [0, 1)``, ... or ``""`` without bounds."""
        lo = (self.gt, "(") if self.gt is not None else (self.ge, "[") if self.ge is not None else None
        hi = (self.lt, ")") if self.lt is not None else (self.le, "]") if self.le is not None else None
        if lo is not None and hi is not None:
            return f"in {lo[1]}{_num(lo[0])}, {_num(hi[0])}{hi[1]}"
        if lo is not None:
            return f"{'>' if lo[1] == '(' else '>='} {_num(lo[0])}"
        if hi is not None:
            return f"{'<' if hi[1] == ')' else '<='} {_num(hi[0])}"
        return ""

    def number_ok(self, x: float) -> bool:
        if not math.isfinite(x):
            return False
        return not (
            (self.gt is not None and not x > self.gt)
            or (self.ge is not None and not x >= self.ge)
            or (self.lt is not None and not x < self.lt)
            or (self.le is not None and not x <= self.le)
        )


@dataclass(frozen=True)
class Declaration:
    """One declared key: its name, type, default and ``Setting``."""

    name: str
    type: Any
    default: Any
    setting: Setting

    def check(self, value: Any, key: str) -> Any:
        return check(value, self.type, key, self.setting, default=self.default)


TRAINING_STEPS = Setting("a training's length in optimizer steps", ge=1)
"""The range of a count of optimizer steps, declared once: ``train.max_steps`` (``TrainConfig``) and the
``total_steps`` of a loop's ``on_train_step`` call (``embtie.sharing.step_call``, which cannot import the
config) both take it."""


MAX_LAYERS = 1024
LAYER_COUNT = Setting("a count of layers or blocks", ge=1, le=MAX_LAYERS)
"""The range of every layer count, declared once: embtie's models' keys (``model.n_layers``, ``enc_layers``, ...)
and a foreign model config's (``n_layer``, ``num_hidden_layers``; ``embtie.hf.config_numbers``). 1,024 is past
every published network (GPT-3 has 96 blocks, Llama 3 405B 126) and what a machine can build: a ladder rung
extrapolated to 2**31 - 1 blocks never finished building, even on the meta device."""


NO_DEFAULT: Any = dataclasses.MISSING
"""the default of a declaration that has none."""


_DECLARATIONS: dict[type, tuple[Declaration, ...]] = {}


def declarations(cls: type) -> tuple[Declaration, ...]:
    """The fields of dataclass ``cls``, in field order, each with the ``Setting`` its type is annotated
    with (``lr: Annotated[float, Setting("peak learning rate", gt=0)] = 1e-3``; none: an empty one)."""
    if cls not in _DECLARATIONS:
        _DECLARATIONS[cls] = _read_declarations(cls)
    return _DECLARATIONS[cls]


def check_as(cls: type, name: str, value: Any, key: str, tp: Any = None) -> Any:
    """``value`` checked as field ``name`` of the declared dataclass ``cls`` is checked (its ``Setting``; its
    type, or ``tp``), for a Python API that takes what a config key takes: the same range, and a one-line
    ConfigError naming ``key`` (``param_groups(weight_decay)``) instead of the config key."""
    d = next(d for d in declarations(cls) if d.name == name)
    tp = d.type if tp is None else tp
    if _text_for_a_number(value, tp):
        verb = "holds" if isinstance(value, list | tuple) else "is"
        raise ConfigError(
            f"{shown(key, value)} {verb} text: it must be {describe(tp, d.setting)}; a Python call passes numbers "
            "as numbers (float(...) first if you read it from a file)"
        )
    return check(value, tp, key, d.setting)


def _text_for_a_number(value: Any, tp: Any) -> bool:
    """Whether ``value`` (or an element of a list or tuple of it) is a str where ``tp`` takes numbers: text a
    config file or command line gives is converted (``check``), but from Python it is a caller's mistake."""
    if isinstance(value, list | tuple):
        return any(_text_for_a_number(v, tp) for v in value)
    return isinstance(value, str) and not _takes_text(tp)


def _takes_text(tp: Any) -> bool:
    """Whether ``tp`` (a type, Literal, Optional, list of them) accepts a str value."""
    if tp is str or tp is Any:
        return True
    args = typing.get_args(tp)
    if typing.get_origin(tp) is Literal:
        return any(isinstance(a, str) for a in args)
    return any(_takes_text(a) for a in args)


def _read_declarations(cls: type) -> tuple[Declaration, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        tp, spec = hints[f.name], Setting()
        if typing.get_origin(tp) is Annotated:
            tp, *extras = typing.get_args(tp)
            spec = next((x for x in extras if isinstance(x, Setting)), spec)
        default = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        out.append(Declaration(f.name, tp, default, spec))
    return tuple(out)


class Declared:
    """Base of a config dataclass whose field types are annotated with a ``Setting``: making an instance
    (from a file, ``dataclasses.replace`` or Python) converts and checks every field (``ConfigError``
    naming ``<section>.<field>``), then runs ``check()``, the rules that tie fields together."""

    section: ClassVar[str] = ""
    """the keys' prefix: ``train``, ``data``, ``model`` (none for the run config's ``task`` and ``seed``)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Every field against its declaration (converting it), then ``check()``."""
        for d in declarations(type(self)):
            key = f"{self.section}.{d.name}" if self.section else d.name
            setattr(self, d.name, d.check(getattr(self, d.name), key))
        self.check()

    def check(self) -> None:
        """Rules between fields (raise ConfigError); none by default."""


# ---------------------------------------------------------------------------- checking


class _Mismatch(Exception):
    """A value that is not of the declared type (turned into a ConfigError by ``check``)."""


def check(value: Any, tp: Any, key: str, spec: Setting | None = None, *, default: Any = NO_DEFAULT) -> Any:
    """``value`` converted to type ``tp`` and checked against ``spec``; a one-line ConfigError naming
    ``key`` (``train.lr``, ``option softcap``, ``--seeds``), the value and what is allowed otherwise."""
    spec = spec or Setting()
    try:
        out = _coerce(value, tp)
    except _Mismatch:
        hint = did_you_mean(value, _literals(tp)) if isinstance(value, str) else ""
        raise ConfigError(f"{shown(key, value)} must be {describe(tp, spec)}{hint}{_default_hint(default)}") from None
    if out is None:
        return out
    what = shown(key, out if isinstance(value, str) else value)  # "1e-4" from text shows as the number it is
    if _numbers_out_of_range(out, spec):
        raise ConfigError(f"{what} must be {_range_words(out, tp, spec)}{_default_hint(default)}")
    if _too_large(out, spec):
        kind = "an integer" if _has_int(out) else "a number"
        raise ConfigError(
            f"{what} is too large: {kind} here must be <= {MAX_INT:,} in magnitude{_default_hint(default)}"
        )
    if isinstance(out, list) and not _length_ok(out, spec):
        raise ConfigError(f"{what} must be {describe(tp, spec)}{_default_hint(default)}")
    if spec.rule is not None and not spec.rule.test(out):
        text = spec.rule.text if isinstance(out, str) else describe(tp, spec)
        raise ConfigError(f"{what} must be {text}{_default_hint(default)}")
    return out


def _coerce(value: Any, tp: Any) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and (value is None or (isinstance(value, str) and value.lower() in ("none", "null"))):
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a)
            except _Mismatch:
                pass
        raise _Mismatch
    if origin is Literal:
        if not isinstance(value, bool) and value in args:
            return value
        raise _Mismatch
    if origin is list:
        if not isinstance(value, list | tuple):
            raise _Mismatch
        return [_coerce(v, args[0]) for v in value] if args else list(value)
    if origin is dict:
        if not isinstance(value, dict):
            raise _Mismatch
        return dict(value)
    return _coerce_plain(value, tp)


def _coerce_plain(value: Any, tp: Any) -> Any:
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _Mismatch
    if tp is int or tp is float:
        if isinstance(value, str):
            number = parse_number(value)
            if number is None:
                raise _Mismatch
            value = number
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Mismatch
        if tp is float:
            return float(value)
        if isinstance(value, float):
            if not value.is_integer():
                raise _Mismatch
            return int(value)
        return value
    if tp is str:
        if isinstance(value, str):
            return value
        raise _Mismatch
    return value  # a nested section (a dataclass) or an undeclared type: its own code checks it


def _range_words(out: Any, tp: Any, spec: Setting) -> str:
    """What a value of the right type but out of range must be: the bounds of a plain number
    (``> 0``, ``a finite number >= 0``), else the whole description (a list, a number or a word)."""
    plain = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
    if len(plain) == 1 and plain[0] in (int, float) and isinstance(out, int | float):
        finite = "" if math.isfinite(out) else "a finite number "
        return f"{finite}{spec.bounds()}".strip() + _or_null(tp, spec)
    return describe(tp, spec)


def _numbers_out_of_range(value: Any, spec: Setting) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return not spec.number_ok(value)
    if isinstance(value, list):
        return any(_numbers_out_of_range(v, spec) for v in value)
    return False


def _too_large(value: Any, spec: Setting) -> bool:
    """A number (or one of a list) beyond ``MAX_INT`` in magnitude where ``spec`` declares no upper bound of
    its own: every numeric key has a range, an integer's what a 32-bit count holds, a float's the same (a
    learning rate of 1e308 or a cap scale of 2**63 is no setting, and would end in inf or in a model that
    cannot learn rather than in one line)."""
    if spec.le is not None or spec.lt is not None or isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return abs(value) > MAX_INT
    return isinstance(value, list) and any(_too_large(v, spec) for v in value)


def _has_int(value: Any) -> bool:
    if isinstance(value, list):
        return all(_has_int(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


def _length_ok(value: list[Any], spec: Setting) -> bool:
    if spec.length is not None and len(value) != spec.length:
        return False
    return spec.min_length is None or len(value) >= spec.min_length


def _literals(tp: Any) -> list[Any]:
    if typing.get_origin(tp) is Literal:
        return list(typing.get_args(tp))
    return [x for a in typing.get_args(tp) for x in _literals(a)]


# ---------------------------------------------------------------------------- words


def show(value: Any) -> str:
    """A value as YAML would write it: true, null, 0.001, 'text', [0.9, 0.95]."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, int) and abs(value) >= 10**16:  # 1e308 read as an integer: 309 digits
        return f"{float(value):g}"
    return repr(value)


def shown(key: str, value: Any) -> str:
    """``train.lr=-0.1`` for a key, ``--seeds 0`` for a command-line flag."""
    return f"{key} {show(value)}" if key.startswith("-") else f"{key}={show(value)}"


def _num(x: float | None) -> str:
    return str(int(x)) if x is not None and float(x).is_integer() else str(x)


def _default_hint(default: Any) -> str:
    return "" if default is NO_DEFAULT else f"; the default is {show(default)}"


def _or_null(tp: Any, spec: Setting) -> str:
    if type(None) not in typing.get_args(tp):
        return ""
    return f", or null ({spec.null})" if spec.null else ", or null"


_SINGULAR = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
_PLURAL = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}


def describe(tp: Any, spec: Setting | None = None) -> str:
    """What ``tp`` with ``spec`` allows, as words: ``an integer >= 1``, ``a number in [0, 1)``,
    ``one of: adamw, sgd``, ``a list of 2 numbers in [0, 1)``, ``a number > 0, 'sqrt_d', or null (off)``."""
    spec = spec or Setting()
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        parts = [a for a in args if a is not type(None)]
        literals = [x for a in parts if typing.get_origin(a) is Literal for x in typing.get_args(a)]
        words = [describe(a, spec) for a in parts if typing.get_origin(a) is not Literal]
        words += [repr(x) for x in literals]
        text = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
        return text + _or_null(tp, spec)
    if typing.get_origin(tp) is Literal:
        return "one of: " + ", ".join(str(a) for a in args)
    if typing.get_origin(tp) is list:
        return _describe_list(args[0] if args else Any, spec)
    if typing.get_origin(tp) is dict:
        return "a mapping of keys to values"
    base = _SINGULAR.get(tp, tp.__name__ if isinstance(tp, type) else str(tp))
    if tp in (int, float) and spec.bounds():
        base = f"{base} {spec.bounds()}"
    if spec.rule is not None and tp is str:
        return spec.rule.text
    return base


def _describe_list(item: Any, spec: Setting) -> str:
    count = f"{spec.length} " if spec.length is not None else ""
    lead = "a non-empty list of" if spec.min_length == 1 and spec.length is None else f"a list of {count}".rstrip()
    if typing.get_origin(item) is list:
        inner = "lists of " + _PLURAL.get(typing.get_args(item)[0], "values")
    else:
        inner = _PLURAL.get(item, "values")
    text = f"{lead} {inner}"
    if spec.bounds():
        text += f" {spec.bounds()}"
    if spec.rule is not None:
        text += f": {spec.rule.text}"
    return text


def allowed(tp: Any, spec: Setting | None = None) -> str:
    """The allowed values of ``tp`` with ``spec`` for the configuration reference: ``>= 1``, ``adamw, sgd``,
    ``> 0, sqrt_d, null (no scaling)``, ``2 items, each in [0, 1)``."""
    spec = spec or Setting()
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        parts = [allowed(a, spec) for a in args if a is not type(None)]
        if type(None) in args:
            parts.append(f"null ({spec.null})" if spec.null else "null")
        return ", ".join(dict.fromkeys(parts))
    if origin is Literal:
        return ", ".join(str(a) for a in args)
    if origin is list:
        count = f"{spec.length} items" if spec.length is not None else "1 or more items" if spec.min_length else "items"
        item = args[0] if args else Any
        if typing.get_origin(item) is list:
            each = f"a list of {_PLURAL.get(typing.get_args(item)[0], 'values')} {spec.bounds()}".rstrip()
        else:
            each = allowed(item, Setting(gt=spec.gt, ge=spec.ge, lt=spec.lt, le=spec.le))
        parts = [count] + ([] if each.startswith("any") else [f"each {each}"])
        return "; ".join(parts + ([spec.rule.text] if spec.rule is not None else []))
    if origin is dict:
        return "a mapping of keys to values"
    if tp is bool:
        return "true, false"
    if tp in (int, float):
        return spec.bounds() or ("any integer" if tp is int else "any finite number")
    if spec.choices is not None:
        return ", ".join(spec.choices())
    if spec.rule is not None:
        return spec.rule.text
    return "any text" if tp is str else "any"


def type_name(tp: Any) -> str:
    """The type as the configuration reference writes it: ``int``, ``float or null``, ``list[int]``,
    ``float or str``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys("null" if a is type(None) else type_name(a) for a in args))
    if origin is Literal:
        return "str" if all(isinstance(a, str) for a in args) else "one of"
    if origin is list:
        return f"list[{type_name(args[0])}]" if args else "list"
    if origin is dict:
        return "mapping"
    return tp.__name__ if isinstance(tp, type) else str(tp)
