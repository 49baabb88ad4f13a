"""What a comparison (or a ladder of comparisons) is asked to do: ``ComparisonRequest``, one field per option
of ``embtie compare``, and the ``CompareSpec`` it stands for (``to_spec``, with every option checked first:
a ConfigError of one line naming the option)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from embtie.errors import ConfigError

if TYPE_CHECKING:
    from embtie.comparison import CompareSpec
    from embtie.comparison.launchers import Launcher
    from embtie.decisions import SequentialDesign


MAX_SEEDS = 1000
"""the most seeds per strategy a comparison takes (``seeds``, ``max_seeds``): paired verdicts decide with
a handful, and a thousand runs per strategy is already more than any grid embtie plans."""

NUMBERS: dict[str, tuple[str, type[int] | type[float], dict[str, float]]] = {
    "seeds": ("--seeds", int, {"ge": 1, "most": MAX_SEEDS}),
    "first_seed": ("--first-seed", int, {"ge": 0}),
    "jobs": ("--jobs", int, {"ge": 1, "most": 1024}),
    "max_seeds": ("--max-seeds", int, {"ge": 2, "most": MAX_SEEDS}),
    "seeds_per_round": ("--seeds-per-round", int, {"ge": 1, "most": MAX_SEEDS}),
    "tokens_per_param": ("--tokens-per-param", float, {"gt": 0, "most": 1e6}),
    "match_tolerance": ("--match-tolerance", float, {"gt": 0, "lt": 1}),
}
"""field -> (the option of embtie compare, its type, its limits: ``embtie.schema.Setting`` fields and
``most``, the largest value honoured); the command's argparse types and ``to_spec`` both check these."""


@dataclass
class ComparisonRequest:
    """A comparison of sharing strategies over paired seeds, as ``embtie compare`` takes it (each field is the
    option of the same name; None is the option left out). ``preset=None`` is the default job (its preset,
    strategies, seeds and overrides)."""

    preset: str | None = None
    """a preset name or YAML file; None: the default job (``embtie.comparison.DEFAULT_PRESET`` and its overrides)."""
    overrides: list[str] = field(default_factory=list)
    """``key=value`` config overrides of every run, e.g. ``train.max_steps=300``."""
    strategies: str | Sequence[str] | None = None
    """comma-separated as --strategies (``"all"``: every registered strategy), or a list of its items
    (``"tied"``, ``"fixed-lr10=fixed:logit_scale_lr=10"``); None: ``DEFAULT_STRATEGIES``."""
    seeds: int | None = None
    """seeds per strategy (the first round with ``until_decided``)."""
    first_seed: int = 0
    out: str | Path | None = None
    """the output folder; None: runs/compare-<preset> (runs/ladder-<preset> for a ladder)."""
    jobs: int | None = None
    """runs trained at once on this machine, each in its own process (with ``launcher=None``)."""
    launcher: Launcher | None = None
    """where the runs train (``embtie.comparison.launchers``); None: this machine, ``jobs`` at once."""
    margins: Sequence[str] | None = None
    """the --margin options, each ``METRIC=VALUE[%],...``."""
    until_decided: bool = False
    max_seeds: int | None = None
    seeds_per_round: int | None = None
    analysis: str | None = None
    """full, light, none or auto (``embtie.comparison.ANALYSIS_CHOICES``)."""
    metric: str | None = None
    """the --metric flag of the metric that decides (``embtie.metrics.BY_FLAG``); None: the task's own."""
    test: bool = False
    test_file: str | None = None
    baseline: str | None = None
    """the label every other strategy is tested against; None: tied."""
    ladder: str | None = None
    """``KEY=V1,V2,...``: run the comparison at each value (``embtie.experiment.run_ladder``)."""
    tokens_per_param: float | None = None
    extrapolate: str | None = None
    match: str | None = None
    """params or flops: deepen the arms that save parameters (or FLOPs) to the largest arm's."""
    match_tolerance: float | None = None
    dry_run: bool = False
    """print the plan and train nothing."""
    report_only: bool = False
    """train nothing: report the runs finished so far."""
    progress: bool = True

    @property
    def default_job(self) -> bool:
        return self.preset is None

    def to_spec(self) -> CompareSpec:
        """The comparison this request stands for (a ConfigError of one line for options that do not fit)."""
        from embtie import cheap, comparison
        from embtie.decisions import parse_margins
        from embtie.metrics import DEFAULT_MARGINS

        self._check_numbers()
        self._check_no_idle_options()
        if self.dry_run and self.report_only:
            raise ConfigError("--dry-run trains nothing and --report-only draws the report; give one of them")
        if self.max_seeds is not None and self.seeds is not None and self.max_seeds < self.seeds:
            raise ConfigError(f"--max-seeds {self.max_seeds} must be >= --seeds {self.seeds}")
        preset = comparison.DEFAULT_PRESET if self.preset is None else self.preset
        overrides = [*comparison.DEFAULT_OVERRIDES, *self.overrides] if self.default_job else list(self.overrides)
        parsed = [comparison.parse_strategy(item) for item in self._strategy_items()]
        design = self._design()
        default_seeds = comparison.DEFAULT_JOB_SEEDS if self.default_job else comparison.DEFAULT_SEEDS
        margins = parse_margins(_margin_text(self.margins), DEFAULT_MARGINS)
        default_analysis = comparison.DEFAULT_JOB_ANALYSIS if self.default_job else comparison.DEFAULT_ANALYSIS
        return comparison.CompareSpec(
            preset=preset,
            strategies=[label for label, _, _ in parsed],
            seeds=design.first if design else cheap.cap(self.seeds or default_seeds, cheap.MAX_SEEDS),
            first_seed=self.first_seed,
            variants={label: (name, opts) for label, name, opts in parsed if label != name or opts},
            overrides=overrides,
            out_dir=Path(self.out) if self.out is not None else Path("runs") / f"compare-{Path(preset).stem}",
            margins={k: m for k, m in margins.items() if DEFAULT_MARGINS[k] != m},
            design=design,
            analysis=self.analysis or default_analysis,
            metric=self.metric,
            test=self.test or self.test_file is not None,
            test_file=self.test_file,
            baseline=_baseline(self.baseline, [label for label, _, _ in parsed]),
        )

    def local_launcher(self) -> Launcher:
        """``launcher``, or this machine's pool of ``jobs`` processes (the default job: one per core, up to 2)."""
        from embtie import cheap, comparison
        from embtie.comparison.launchers import LocalLauncher

        if self.launcher is not None:
            return self.launcher
        jobs = self.jobs if self.jobs is not None else (comparison.default_jobs() if self.default_job else 1)
        return LocalLauncher(cheap.cap(jobs, 1))  # EMBTIE_CHEAP: no worker processes for runs of a few steps

    def _strategy_items(self) -> list[str]:
        """The --strategies items: the defaults, every registered strategy ("all"), or the given ones."""
        from embtie import comparison, sharing

        if self.strategies is None:
            return list(comparison.DEFAULT_STRATEGIES)
        if not isinstance(self.strategies, str):
            return [s.strip() for s in self.strategies]
        if self.strategies.strip() == "all":
            return sharing.names()
        return comparison.split_strategies(self.strategies)

    def _design(self) -> SequentialDesign | None:
        """--until-decided's rounds (None without it)."""
        from embtie import cheap
        from embtie.decisions import SequentialDesign

        if not self.until_decided:
            return None
        first = self.seeds if self.seeds is not None else SequentialDesign.first
        if first < 2:
            raise ConfigError(f"--seeds {first} must be >= 2 with --until-decided (a paired interval needs 2)")
        max_seeds = self.max_seeds if self.max_seeds is not None else SequentialDesign.max_seeds
        first, max_seeds = cheap.cap(first, cheap.SEQUENTIAL_SEEDS), cheap.cap(max_seeds, cheap.SEQUENTIAL_SEEDS)
        step = self.seeds_per_round if self.seeds_per_round is not None else SequentialDesign.step
        return SequentialDesign(first=first, step=step, max_seeds=max_seeds)

    def _check_numbers(self) -> None:
        """Every number within its ``NUMBERS`` limits (one line naming the option, as the command says it)."""
        from embtie.schema import Setting, check

        for name, (flag, tp, limits) in NUMBERS.items():
            value = getattr(self, name)
            if value is None:
                continue
            most = limits.get("most")
            if most is not None and isinstance(value, int | float) and value > most:
                raise ConfigError(f"{flag} {value} is too large: give at most {most:,}")
            check(value, tp, flag, Setting(gt=limits.get("gt"), ge=limits.get("ge"), lt=limits.get("lt")))

    def _check_no_idle_options(self) -> None:
        """Options that would do nothing in the mode asked for are refused, with the reason: the ladder's and
        the sequential design's options without --ladder / --until-decided, a ``seed=`` override (every run's
        seed comes from --first-seed and its place in the grid)."""
        if self.ladder is None:
            for flag, value in (("--tokens-per-param", self.tokens_per_param), ("--extrapolate", self.extrapolate)):
                if value is not None:
                    raise ConfigError(
                        f"{flag} {value} is an option of --ladder; add --ladder KEY=V1,V2,... or leave it out"
                    )
        if self.match is None and self.match_tolerance is not None:
            raise ConfigError(f"--match-tolerance {self.match_tolerance:g} is an option of --match; add --match params")
        if not self.until_decided:
            for flag, value in (("--max-seeds", self.max_seeds), ("--seeds-per-round", self.seeds_per_round)):
                if value is not None:
                    raise ConfigError(
                        f"{flag} {value} is an option of --until-decided (the rounds of a sequential design); add "
                        f"--until-decided, or give the number of seeds with --seeds"
                    )
        for o in self.overrides:
            if o.split("=", 1)[0].strip() == "seed":
                raise ConfigError(
                    f"{o!r} has no effect in a comparison: its runs take the seeds --first-seed, --first-seed + 1, "
                    "...; give --first-seed N instead"
                )


def _baseline(given: str | None, labels: list[str]) -> str:
    """The baseline label: ``--baseline`` when given (one of ``labels``), else tied."""
    from embtie import comparison

    if given is None:
        return comparison.BASELINE
    if given not in labels:
        raise ConfigError(f"--baseline {given!r} is not among --strategies ({','.join(labels)}); add it there or "
                          "name one of them")  # fmt: skip
    return given


def _margin_text(given: Sequence[str] | None) -> str | None:
    """The --margin options (repeatable, each METRIC=VALUE[%],...) as one list; a metric given twice is
    refused (the last would silently win)."""
    if not given:
        return None
    items = [i.strip() for text in given for i in text.split(",")]
    if not all(items):
        raise ConfigError(f"--margin {','.join(given)!r} has an empty item; write --margin valid_ppl=1%,bleu=0.5")
    keys = [i.partition("=")[0].strip() for i in items]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise ConfigError(f"--margin gives {twice} more than once; keep one margin per metric")
    return ",".join(items)
