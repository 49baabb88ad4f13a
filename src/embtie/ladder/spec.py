"""What ``--ladder KEY=V1,V2,...`` asks for: the rungs (one config change each), the token rule that sizes
every rung's training, and the rungs only extrapolated to (``--extrapolate``). Pure: no config is loaded here
(``ladder.budget`` loads them).

The token rule: every arm of a rung trains on ``tokens_per_param`` x the rung's body (non-embedding)
parameters (``planning.model_shape.ModelShape.body``), rounded up to whole steps. Default 20, Hoffmann et
al.'s (2022) compute-optimal ratio: every rung then sits at the same place on its own compute curve, so an
effect that moves along the ladder moves with size and not with how far each size was trained. The body and
not the whole model: the strategies under test differ in their embedding parameters (untied has V d more
than tied), and one budget for every arm of a rung keeps the paired difference a difference of strategies;
at small rungs the V x d tables (320 k at d = 32 for PTB's 10 k words) would also swamp a 12 k body.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from embtie.errors import ConfigError
from embtie.ladder import sizes

DEFAULT_TOKENS_PER_PARAM = 20.0
"""training tokens per body parameter (Hoffmann et al. 2022's ~20; see the module docstring)."""

SIZE_KEY = "size"
"""the ladder key that sets depth, width and heads together (``ladder.sizes``)."""

REFUSED_KEYS = {
    "seed": "the seeds of every rung come from --seeds and --first-seed",
    "sharing.name": "the strategies of every rung come from --strategies",
    "train.max_steps": "the ladder sets every rung's steps from its body parameters; change --tokens-per-param",
    "train.epochs": "the ladder sets every rung's steps from its body parameters; change --tokens-per-param",
}
"""keys a ladder cannot step, and why."""

EXAMPLE = "--ladder size=xs,s,m,l or --ladder model.n_layers=1,2,4,8"


@dataclass(frozen=True)
class Rung:
    value: str
    """the ladder key's value at this rung: as given by ``parse``, its key's typed value written back once
    ``ladder.values.normalized`` has read it."""
    overrides: tuple[str, ...]
    """the config overrides that make this rung."""
    folder: str
    """the rung's sub-folder of the ladder's output (``rungs/<folder>``), stable so that a rerun resumes it."""
    flag: str = "--ladder"
    """the option that gave the value: ``--ladder`` (a trained rung) or ``--extrapolate``; messages name it."""


@dataclass(frozen=True)
class Ladder:
    key: str
    values: tuple[str, ...]
    tokens_per_param: float = DEFAULT_TOKENS_PER_PARAM
    extrapolate: tuple[str, ...] = field(default=())
    """values of ``key`` the ladder does not train: the report predicts the effect there from the trend."""

    def text(self) -> str:
        """How --ladder is written."""
        return f"{self.key}={','.join(self.values)}"

    def rung(self, value: str, flag: str = "--ladder") -> Rung:
        """The rung of ``value``, given by ``flag`` (``--ladder`` or ``--extrapolate``)."""
        if self.key == SIZE_KEY:
            overrides = tuple(sizes.size(value, flag).overrides())
        else:
            overrides = (f"{self.key}={value}",)
        return Rung(value, overrides, folder_name(f"{self.key.rsplit('.', 1)[-1]}-{value}"), flag)

    def rungs(self) -> list[Rung]:
        return [self.rung(v) for v in self.values]

    def beyond(self) -> list[Rung]:
        """The extrapolated rungs."""
        return [self.rung(v, "--extrapolate") for v in self.extrapolate]

    def options(self) -> list[str]:
        """The command-line options that give this ladder."""
        parts = ["--ladder", self.text()]
        if self.tokens_per_param != DEFAULT_TOKENS_PER_PARAM:
            parts += ["--tokens-per-param", f"{self.tokens_per_param:g}"]
        if self.extrapolate:
            parts += ["--extrapolate", ",".join(self.extrapolate)]
        return parts


MAX_FOLDER = 64
"""the longest rung folder name (a value can be a long path: ``model.hf=/data/configs/...json``)."""


def folder_name(text: str) -> str:
    """A rung's folder, ``KEY-VALUE`` as it is when it is a short safe name, else its safe characters cut to
    fit, then the first 8 hex digits of its sha256: two values never share a folder (``a/b.json`` and
    ``a_b.json``, or two long paths alike in their first 64 characters), and a rerun finds the same one."""
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", text)
    if safe == text and len(text) <= MAX_FOLDER:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return f"{safe[: MAX_FOLDER - 9]}-{digest}"


def _values(flag: str, text: str) -> tuple[str, ...]:
    items = [v.strip() for v in text.split(",")]
    if not all(items):
        raise ConfigError(f"{flag} has an empty value in {text!r}; write {EXAMPLE}")
    twice = next((v for v in items if items.count(v) > 1), None)
    if twice is not None:
        raise ConfigError(f"{flag} lists {twice!r} twice; give every rung once")
    return tuple(items)


def parse(text: str, tokens_per_param: float = DEFAULT_TOKENS_PER_PARAM, extrapolate: str | None = None) -> Ladder:
    """The ladder ``--ladder KEY=V1,V2,...`` asks for (a ConfigError of one line naming the fault and the fix)."""
    key, eq, rest = text.partition("=")
    key = key.strip()
    if not eq or not key or not rest.strip():
        raise ConfigError(f"--ladder {text!r} is not KEY=V1,V2,...; write {EXAMPLE}")
    if key in REFUSED_KEYS or key.startswith("sharing."):
        why = REFUSED_KEYS.get(key, "a strategy's options are varied with labelled --strategies variants")
        raise ConfigError(f"--ladder cannot step {key}: {why}")
    if key != SIZE_KEY and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+", key):
        raise ConfigError(
            f"--ladder key {key!r} is neither 'size' nor a config key like model.n_layers; write {EXAMPLE}"
        )
    values = _values("--ladder", rest)
    if len(values) < 2:
        raise ConfigError(f"--ladder {text!r} has one rung; a ladder needs at least 2 values, e.g. {EXAMPLE}")
    beyond = _values("--extrapolate", extrapolate) if extrapolate is not None else ()
    both = next((v for v in beyond if v in values), None)
    if both is not None:
        raise ConfigError(f"--extrapolate {both} is a rung the ladder trains; extrapolate to values beyond the ladder")
    if not tokens_per_param > 0:
        raise ConfigError(f"--tokens-per-param {tokens_per_param:g} must be > 0 (default {DEFAULT_TOKENS_PER_PARAM:g})")
    ladder = Ladder(key, values, tokens_per_param, beyond)
    ladder.rungs(), ladder.beyond()  # size names checked
    return ladder


STEPS_REASON = "the ladder sets for every arm from the rung's body parameters (change --tokens-per-param)"


def set_keys(ladder: Ladder) -> dict[str, str]:
    """The config keys the ladder sets for every arm of a rung (its rung's keys, its token budget) -> a clause
    saying so, for "KEY, which ..." messages."""
    rung = ladder.rung(ladder.values[0])
    stepped = {o.split("=", 1)[0]: f"--ladder {ladder.text()} steps for every arm" for o in rung.overrides}
    return {**stepped, "train.max_steps": STEPS_REASON, "train.epochs": STEPS_REASON}


def check_overrides(ladder: Ladder, overrides: list[str]) -> None:
    """The user's overrides must not set what the ladder steps or sets (the rung would silently lose)."""
    keys = set_keys(ladder)
    for o in overrides:
        key = o.split("=", 1)[0].strip()
        if key in keys:
            raise ConfigError(f"{o!r} sets {key}, which {keys[key]}; leave it out")
