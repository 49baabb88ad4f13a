"""A finished comparison's design read back from its folder, to be re-run on fresh seeds (``embtie confirm``).

The design is read from DIR/design.json (written by ``embtie compare`` before its first run) or, for a folder
older than design files, from DIR/results.json: its ``command`` (the strategies as written, the baseline, the
metric, the margins and the looks), its ``preset`` and ``overrides``. The seeds the original used are every
seed of its rows and of its design's looks; a confirmation starts past all of them. ``compare_args`` is the
``embtie compare`` command line that re-runs the design on other seeds; ``differences`` names what makes
two folders two designs (the arms, baseline, metric, margins, preset, overrides or how the arms were matched
in parameters or FLOPs: the seeds and looks may differ, that is the point of a confirmation). A ladder is
refused (it is a list of comparisons: each rung is re-run by hand with --first-seed).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE, match_text
from embtie.comparison.design_file import read_design
from embtie.comparison.grid import split_strategies
from embtie.decisions import SequentialDesign
from embtie.errors import ConfigError
from embtie.metrics import DEFAULT_MARGINS

# compare options that take a value, and the flags that take none (what an old results.json command holds)
_VALUED = {"--strategies", "--seeds", "--first-seed", "--out", "--jobs", "--margin", "--max-seeds", "--metric",
           "--seeds-per-round", "--test-file", "--baseline", "--analysis", "--launcher", "--match",
           "--match-tolerance"}  # fmt: skip
_FLAGS = {"--until-decided", "--test", "--no-progress", "--report-only", "--debug", "--quiet", "--dry-run"}
_REFUSED = {"--ladder", "--tokens-per-param", "--extrapolate"}


@dataclass(frozen=True)
class OriginalDesign:
    """What a finished comparison tested, as ``embtie compare`` options."""

    preset: str
    strategies: tuple[str, ...]
    """as written in --strategies (labelled variants with their options)."""
    baseline: str
    metric: str | None
    margins: tuple[str, ...]
    """the --margin items that differ from the defaults, e.g. ``valid_ppl=0.5%``."""
    looks: tuple[int, ...]
    overrides: tuple[str, ...]
    seeds_used: tuple[int, ...]
    analysis: str | None
    source: str
    """where it was read: ``design.json`` or ``results.json``."""
    match: str | None = None
    """how the arms were matched, as design.json writes it (``params:0.05``), or None."""

    @property
    def next_seed(self) -> int:
        """The first seed past every seed the original used."""
        return max(self.seeds_used, default=-1) + 1

    def compare_args(self, out: Path, first_seed: int, looks: tuple[int, ...], jobs: int) -> list[str]:
        """The ``embtie compare`` arguments (after ``compare``) re-running this design on ``looks`` seeds
        from ``first_seed`` into ``out``."""
        args = [self.preset, "--strategies", ",".join(self.strategies), "--baseline", self.baseline]
        args += ["--seeds", str(looks[0])]
        if len(looks) > 1:
            args += ["--until-decided", "--max-seeds", str(looks[-1]), "--seeds-per-round", str(looks[1] - looks[0])]
        args += ["--first-seed", str(first_seed), "--jobs", str(jobs), "--out", str(out), "--no-progress"]
        if self.metric is not None:
            args += ["--metric", self.metric]
        if self.margins:
            args += ["--margin", ",".join(self.margins)]
        if self.analysis is not None:
            args += ["--analysis", self.analysis]
        if self.match is not None:
            mode, _, tolerance = self.match.partition(":")
            args += ["--match", mode] + (["--match-tolerance", tolerance] if tolerance else [])
        return args + list(self.overrides)

    def differences(self, other: OriginalDesign) -> str:
        """What makes ``other`` another design than this one ('' when it re-runs this one)."""
        fields = ("preset", "strategies", "baseline", "metric", "margins", "overrides", "match")
        changed = [f for f in fields if getattr(self, f) != getattr(other, f)]
        return "; ".join(f"{f}: {_shown(getattr(self, f))} -> {_shown(getattr(other, f))}" for f in changed)


def _shown(value: Any) -> str:
    return ",".join(value) if isinstance(value, tuple) else str(value)


def looks_of(seeds: int, until_decided: bool, max_seeds: int | None, per_round: int | None) -> tuple[int, ...]:
    """The looks of ``embtie compare --seeds S [--until-decided --max-seeds M --seeds-per-round K]``."""
    if not until_decided:
        return (seeds,)
    step = per_round if per_round is not None else SequentialDesign.step
    last = max_seeds if max_seeds is not None else SequentialDesign.max_seeds
    return SequentialDesign(first=seeds, step=step, max_seeds=last).looks


def _saved(folder: Path) -> dict[str, Any] | None:
    path = folder / "results.json"
    if not path.is_file():
        return None
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError, ValueError) as e:
        raise ConfigError(f"{path} is not a comparison's results.json ({e}); give the folder `embtie compare` "
                          f"wrote") from e  # fmt: skip


def read_original(folder: Path) -> OriginalDesign:
    """The design of the comparison in ``folder``; a ConfigError in one line when there is none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder; give the --out folder of a finished `embtie compare`")
    saved = _saved(folder)
    rows_seeds = tuple(int(r["seed"]) for r in (saved or {}).get("rows", []))
    analysis = _command_options(saved).get("--analysis") if saved and saved.get("command") else None
    fixed = read_design(folder)
    if fixed is not None:
        d = fixed.design
        looks = tuple(int(n) for n in d["looks"])
        used = set(rows_seeds) | set(range(int(d["first_seed"]), int(d["first_seed"]) + looks[-1]))
        margins = tuple(f"{k}={v}" for k, v in sorted(d["margins"].items()) if DEFAULT_MARGINS[k].spec() != v)
        return OriginalDesign(str(d["preset"]), tuple(d["strategies"]), str(d["baseline"]), d.get("metric"),
                              margins, looks, tuple(d["overrides"]), tuple(sorted(used)), analysis, "design.json",
                              d.get("match"))
    if saved is None or not saved.get("command"):
        what = "no results.json" if saved is None else "a results.json without the command that made it"
        raise ConfigError(f"{folder} has no design.json and {what}: it holds no comparison to confirm; give the "
                          f"--out folder of a finished `embtie compare`")  # fmt: skip
    return _from_command(folder, saved, rows_seeds, analysis)


def _command_options(saved: dict[str, Any]) -> dict[str, str]:
    """The options of an old results.json ``command`` (the last value of each; --margin items joined)."""
    words = shlex.split(str(saved["command"]))
    words = words[words.index("compare") + 1 :] if "compare" in words else words
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        word, value = [*words[i].split("=", 1), ""][:2] if words[i].startswith("--") else (words[i], "")
        if word in _REFUSED:
            raise ConfigError(f"its command uses {word}: a ladder is not re-run by `embtie confirm`; run each "
                              f"rung's compare command with --first-seed by hand")  # fmt: skip
        if word in _VALUED:
            if not value:
                i += 1
                value = words[i] if i < len(words) else ""
            options[word] = f"{options[word]},{value}" if word == "--margin" and word in options else value
        elif word in _FLAGS:
            options[word] = "yes"
        elif not word.startswith("-") and "=" not in word and "preset" not in options:
            options["preset"] = word
        i += 1
    return options


def _is_default(item: str) -> bool:
    """Whether a --margin item (``valid_ppl=1%``) gives the default margin (so the design is the same without it)."""
    key, _, value = item.partition("=")
    margin = DEFAULT_MARGINS.get(key.strip())
    return margin is not None and margin.spec() == value.strip()


def _from_command(folder: Path, saved: dict[str, Any], rows_seeds: tuple[int, ...], analysis: str | None
                  ) -> OriginalDesign:  # fmt: skip
    try:
        options = _command_options(saved)
    except ConfigError as e:
        raise ConfigError(f"{folder}: {e}") from e
    seeds = int(options.get("--seeds", saved.get("seeds", 3)))
    looks = looks_of(seeds, "--until-decided" in options,
                     int(options["--max-seeds"]) if "--max-seeds" in options else None,
                     int(options["--seeds-per-round"]) if "--seeds-per-round" in options else None)  # fmt: skip
    strategies = options.get("--strategies")
    margins = tuple(m for m in options.get("--margin", "").split(",") if m and not _is_default(m))
    return OriginalDesign(
        preset=str(saved.get("preset") or options.get("preset")),
        strategies=tuple(split_strategies(strategies)) if strategies else tuple(saved["strategies"]),
        baseline=str(saved.get("baseline") or options.get("--baseline") or "tied"),
        metric=options.get("--metric"),
        margins=margins,
        looks=looks,
        overrides=tuple(saved.get("overrides", [])),
        seeds_used=tuple(sorted(set(rows_seeds))),
        analysis=analysis,
        source="results.json",
        match=_match_of(options),
    )


def _match_of(options: dict[str, str]) -> str | None:
    """An old command's --match and --match-tolerance as design.json writes them (``params:0.05``)."""
    if "--match" not in options:
        return None
    return match_text(options["--match"], float(options.get("--match-tolerance", DEFAULT_MATCH_TOLERANCE)))
