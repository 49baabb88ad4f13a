"""The one number grammar, the one reading of a key=value value, and the one check of a declared value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

import pytest

from embtie.errors import ConfigError
from embtie.schema import Declared, Rule, Setting, allowed, check, describe, parse_number, parse_scalar


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1e-4", 1e-4),
        ("1E4", 1e4),
        (".5", 0.5),
        ("5.", 5.0),
        ("-3", -3),
        ("+3", 3),
        ("1_000", 1000),
        ("1_000.5", 1000.5),
        ("2.5e+3", 2500.0),
        ("inf", math.inf),
        ("-Infinity", -math.inf),
        (" 7 ", 7),
    ],
)
def test_numbers_parse_alike(text, number):
    assert parse_number(text) == number
    assert type(parse_number(text)) is type(number)
    assert parse_scalar(text) == number


def test_nan_is_a_number_that_no_range_accepts():
    assert math.isnan(parse_number("nan"))
    with pytest.raises(ConfigError, match=r"^train.lr=nan must be a finite number > 0"):
        check("nan", float, "train.lr", Setting(gt=0))


@pytest.mark.parametrize("text", ["", "e4", "1e", "1__0", "_1", "1.2.3", "0x10", "sqrt_d", "1e4x", "--3"])
def test_non_numbers(text):
    assert parse_number(text) is None


def test_scalars_that_are_not_numbers_are_yaml():
    assert parse_scalar("true") is True
    assert parse_scalar("null") is None
    assert parse_scalar("[2000, 10000]") == [2000, 10000]
    assert parse_scalar("sqrt_d") == "sqrt_d"
    assert parse_scalar("") == ""
    assert parse_scalar("{bad") == "{bad"  # not valid YAML: the text itself


def test_check_converts_to_the_declared_type():
    assert check("1e-4", float, "k") == 1e-4
    assert check(3, float, "k") == 3.0 and isinstance(check(3, float, "k"), float)
    assert check("1e4", int, "k") == 10000 and isinstance(check("1e4", int, "k"), int)
    assert check(2.0, int, "k") == 2
    assert check("null", int | None, "k") is None
    assert check("1e-4", float | Literal["sqrt_d"] | None, "k") == 1e-4
    assert check("sqrt_d", float | Literal["sqrt_d"] | None, "k") == "sqrt_d"
    assert check(("3", 4), list[int], "k") == [3, 4]


@pytest.mark.parametrize(
    ("value", "tp", "spec", "message"),
    [
        (-0.1, float, Setting(gt=0), "train.lr=-0.1 must be > 0"),
        ("-0.1", float, Setting(gt=0), "train.lr=-0.1 must be > 0"),
        ("fast", float, Setting(gt=0), "train.lr='fast' must be a number > 0"),
        (2.5, int, Setting(ge=1), "train.lr=2.5 must be an integer >= 1"),
        (True, int, Setting(ge=1), "train.lr=true must be an integer >= 1"),
        (0, int | None, Setting(ge=1, null="no cap"), "train.lr=0 must be >= 1, or null (no cap)"),
        (1.0, float, Setting(ge=0, lt=1), "train.lr=1.0 must be in [0, 1)"),
        ([0.9], list[float], Setting(length=2, ge=0, lt=1), "train.lr=[0.9] must be a list of 2 numbers in [0, 1)"),
        ([], list[int], Setting(min_length=1, ge=1), "train.lr=[] must be a non-empty list of integers >= 1"),
        ("adam", Literal["adamw", "sgd"], Setting(), "train.lr='adam' must be one of: adamw, sgd; did you mean"),
        ("yes", bool, Setting(), "train.lr='yes' must be true or false"),
        (-1, float | Literal["sqrt_d"] | None, Setting(gt=0), "train.lr=-1 must be a number > 0 or 'sqrt_d', or null"),
        ("gpu", str, Setting(rule=Rule(lambda s: s == "cpu", "cpu only")), "train.lr='gpu' must be cpu only"),
    ],
)
def test_messages_name_key_value_and_range(value, tp, spec, message):
    with pytest.raises(ConfigError) as e:
        check(value, tp, "train.lr", spec)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_messages_give_the_default_and_flags_read_as_typed():
    with pytest.raises(ConfigError, match=r"^train.lr=-1 must be > 0; the default is 0.001$"):
        check(-1, float, "train.lr", Setting(gt=0), default=1e-3)
    with pytest.raises(ConfigError, match=r"^--seeds 0 must be >= 1$"):
        check("0", int, "--seeds", Setting(ge=1))


def test_words_of_the_reference():
    assert describe(int | None, Setting(ge=1, null="all")) == "an integer >= 1, or null (all)"
    assert allowed(int | None, Setting(ge=1, null="all")) == ">= 1, null (all)"
    scale = float | Literal["sqrt_d"] | None
    assert allowed(scale, Setting(gt=0, null="no scaling")) == "> 0, sqrt_d, null (no scaling)"
    assert allowed(list[float], Setting(length=2, ge=0, lt=1)) == "2 items; each in [0, 1)"
    assert allowed(Literal["a", "b"]) == "a, b"
    assert allowed(bool) == "true, false"


@dataclass
class _Section(Declared):
    section = "demo"

    n: Annotated[int, Setting("a count", ge=1)] = 1
    xs: Annotated[list[float], Setting("numbers", ge=0)] = field(default_factory=lambda: [1.0])
    name: Annotated[str, Setting("free text")] = "a"

    def check(self) -> None:
        if self.n > 10 and self.name == "a":
            raise ConfigError("demo.n > 10 needs demo.name != 'a'")


def test_a_declared_dataclass_checks_and_converts_when_made():
    d = _Section(n="1e1", xs=("2", 3))  # type: ignore[arg-type]
    assert d.n == 10 and d.xs == [2.0, 3.0]
    with pytest.raises(ConfigError, match=r"^demo.n=0 must be >= 1; the default is 1$"):
        _Section(n=0)
    with pytest.raises(ConfigError, match=r"^demo.xs=\[-1\] must be a list of numbers >= 0"):
        _Section(xs=[-1])
    with pytest.raises(ConfigError, match=r"needs demo.name"):
        _Section(n=11)


@pytest.mark.parametrize(
    ("value", "tp", "spec", "message"),
    [
        (1e308, float, Setting(gt=0), "k=1e+308 is too large: a number here must be <= 2,147,483,647 in magnitude"),
        (-1e10, float, Setting(), "k=-10000000000.0 is too large: a number here must be <= 2,147,483,647"),
        ([0.5, 3e9], list[float], Setting(ge=0), "k=[0.5, 3000000000.0] is too large: a number here"),
        (2**31, int, Setting(ge=0), "k=2147483648 is too large: an integer here must be <= 2,147,483,647"),
    ],
)
def test_every_number_without_an_upper_bound_has_the_integers_magnitude(value, tp, spec, message):
    with pytest.raises(ConfigError) as e:
        check(value, tp, "k", spec)
    assert str(e.value).startswith(message), str(e.value)


def test_a_declared_upper_bound_replaces_the_magnitude_cap():
    assert check(2.0**40, float, "k", Setting(gt=0, le=2.0**50)) == 2.0**40
    assert check(float(2**31 - 1), float, "k", Setting(gt=0)) == 2**31 - 1
