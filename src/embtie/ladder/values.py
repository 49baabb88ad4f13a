"""``--ladder KEY=V1,V2,...`` values parsed once, by the type their key has in the preset's config: each value
is read the one way a ``key=value`` override is (``embtie.config.load_config``: converted to the declared
type and range-checked), and the rung is named by that typed value written back. So ``1``, ``1.0``, ``01``
and ``+1`` of an integer key are one rung, ``1e-3`` and ``0.001`` of a float key are one rung, and a value
the key cannot take is refused naming the rung, before anything trains. ``size`` values are names
(``ladder.sizes``) and stay as written.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from embtie.config import load_config
from embtie.errors import ConfigError
from embtie.ladder.spec import SIZE_KEY, Ladder


def text_of(value: Any) -> str:
    """A typed config value as a rung is named: strings as they are, everything else as compact JSON
    (``4``, ``0.001``, ``true``, ``null``, ``[1,2]``)."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def typed(key: str, value: str, preset: str, overrides: list[str], flag: str = "--ladder") -> Any:
    """``value`` of ``key`` as the preset's config reads it (a ConfigError naming ``flag``'s rung when it
    cannot)."""
    try:
        cfg = load_config(preset, [*overrides, f"{key}={value}"]).to_dict()
    except ConfigError as e:
        raise ConfigError(f"{flag} rung {value}: {e}") from None
    for part in key.split("."):
        cfg = cfg[part]
    return cfg


def _canonical(flag: str, key: str, given: tuple[str, ...], preset: str, overrides: list[str]) -> tuple[str, ...]:
    out: dict[str, str] = {}
    for v in given:
        text = text_of(typed(key, v, preset, overrides, flag))
        if text in out:
            raise ConfigError(
                f"{flag} gives {key}={out[text]} and {key}={v}, both {text} as the config reads them; give every "
                "rung once"
            )
        out[text] = v
    return tuple(out)


def normalized(ladder: Ladder, preset: str, overrides: list[str]) -> Ladder:
    """``ladder`` with every value (rungs and extrapolated ones) written as its key's typed value; two
    spellings of one value, or an extrapolated value the ladder trains, are refused in one line."""
    if ladder.key == SIZE_KEY:
        return ladder
    values = _canonical("--ladder", ladder.key, ladder.values, preset, overrides)
    beyond = _canonical("--extrapolate", ladder.key, ladder.extrapolate, preset, overrides)
    both = next((v for v in beyond if v in values), None)
    if both is not None:
        raise ConfigError(
            f"--extrapolate {ladder.key}={both} is a rung the ladder trains; extrapolate to values beyond the ladder"
        )
    return replace(ladder, values=values, extrapolate=beyond)
