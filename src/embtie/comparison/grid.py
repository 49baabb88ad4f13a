"""What a comparison trains: the grid of strategies x seeds (``CompareSpec``), its validated runs
(``plan``), how --strategies is written, and the default job.

Layout of an output folder DIR::

    DIR/runs/<strategy>/seed<k>/      one ``embtie.training.api`` run directory each (+ analysis/)
    DIR/results.csv, results.json     one row / record per run, and the per-strategy statistics
    DIR/report.md, report.html, *.png the report (see ``embtie.reporting.comparison_report``)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embtie.analysis import run_diagnostics
from embtie.comparison import invariants, labels, metric_fit, optimizer_reach
from embtie.comparison.arms import DEFAULT_MATCH_TOLERANCE, Matching
from embtie.config import RunConfig, load_config
from embtie.decisions import Margin, SequentialDesign
from embtie.errors import ConfigError
from embtie.schema import parse_scalar

BASELINE = "tied"
"""the strategy every other one is tested against."""

DEFAULT_PRESET = "ptb-gpt-tiny"
DEFAULT_STRATEGIES = ("tied", "untied", "tied-loginit")
"""The default job: the baseline and two of Su's countermeasures to tied's huge initial loss: untying
(and its parameter cost) and initialising the shared table at N(0, (ln V / d)^2). Chosen because each of
them is decided at this budget with 5 paired seeds on every machine measured, while ``l2norm`` (Liu's
normalisation) sits within 0.3% of tied with a paired spread of 1.1%: deciding it (equivalent within
±1%) would take about 15 paired seeds, more than the 10 minutes this job has
(results/default-job/README.md). Compare it, or any other, with --strategies."""
DEFAULT_SEEDS = 3
DEFAULT_JOB_SEEDS = 5
DEFAULT_OVERRIDES: tuple[str, ...] = (
    "data.batch_size=16",
    "train.lr=0.001",
    "train.max_steps=300",
    "train.warmup_steps=30",
    "train.eval_every=50",
    "train.eval_batches=10",
    "train.checkpoint_every=300",
    "train.threads=1",
)
"""Applied before the user's overrides when no preset is given: 15 runs (3 strategies x 5 paired seeds) of
300 steps of 16 x 64 tokens at peak learning rate 1e-3, validated every 50 steps on 10 batches and at the
end on the whole PTB validation set; two runs at a time (``--jobs``, one thread each). Why these numbers
(results/default-job/README.md has the measurements): at the preset's peak rate 3e-3 the tied baseline
sits on an instability (Su's huge initial loss meets the peak of the warm-up) whose outcome the CPU's
kernels decide: one seed ended at perplexity 447.9, 397.7 and 372.9 under three numerics variants of one
AMD EPYC, while untied and l2norm moved by under 0.5%. At 1e-3 the same tied seed moves by 0.6%, and the
verdicts are the same under every variant measured. The whole validation set (not a slice) keeps the
evaluation sample's share of the paired spread small. One thread per run: on a busy machine two threads
per process are slower than one."""

DEFAULT_JOB_DESIGN = SequentialDesign(first=DEFAULT_JOB_SEEDS, step=1, max_seeds=DEFAULT_JOB_SEEDS)
"""How the default job decides: one look at its 5 paired seeds, every test at level 0.05 with Holm over
untied and tied-loginit (what ``compare`` does without --until-decided, written as a one-look design so that
bench/job_simulation.py can replay it on the measured noise). Margin: perplexity ±1%, the
default, fixed before the runs that decide."""

DEFAULT_ANALYSIS = "auto"
"""How much each run of a comparison is analysed after training (``--analysis``; ``analysis_level``)."""
DEFAULT_JOB_ANALYSIS = "light"
"""the same for the default job (no preset given): light, so that its 15 runs fit in 10 minutes on 2 cores;
its report leaves out the row-update, word-similarity and update-dynamics sections (--analysis full
restores them without retraining)."""

ANALYSIS_CHOICES = ("auto", *run_diagnostics.LEVELS)
FULL_ANALYSIS_MIN_STEPS = 200
"""``auto`` analyses fully the runs whose step cap is at least this (or that have none), lightly the
shorter ones. A full analysis adds, over a light one, 8 training batches forward and backward (row
updates), the word-similarity tables and the Procrustes similarities of the report: a few training
steps' worth per run, under 5% of a 200-step run but as much as a 40-step run's training itself
(issue 39 measured 25-40 s of analysis after 27-50 s of training)."""

STRATEGY_OPTIONS: dict[str, dict[str, Any]] = {
    "fixed": {"logit_scale": "learned", "bias": True},
    "hadamard": {"logit_scale": "learned", "bias": True},
}
"""Options given to a strategy in a comparison unless ``sharing.options.*`` overrides say otherwise. A fixed
classifier with unit-norm rows gets a learned logit scale (Hoffer et al.) and a learned output bias: the
bias carries the unigram prior that learned heads put into their row norms. The width of the random
targets (``target_dim``) is the larger lever for language models and is left at the paper's d here
(docs/fixed-head.md has the measurements)."""


@dataclass
class CompareSpec:
    preset: str = DEFAULT_PRESET
    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    seeds: int = DEFAULT_SEEDS
    overrides: list[str] = field(default_factory=list)
    out_dir: Path = Path("runs/compare")
    first_seed: int = 0
    """the seeds are first_seed, first_seed + 1, ..., first_seed + seeds - 1."""
    variants: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """label -> (strategy name, options) for entries of ``strategies`` that are labelled variants
    (``LABEL=NAME:key=value:...`` on the command line, see ``parse_strategy``)."""
    margins: dict[str, Margin] = field(default_factory=dict)
    """margins of practical equivalence that differ from ``embtie.metrics.DEFAULT_MARGINS`` (``--margin``)."""
    design: SequentialDesign | None = None
    """the sequential design of ``--until-decided`` (None: every seed at once, one look)."""
    seed_counts: dict[str, int] = field(default_factory=dict)
    """seeds of a strategy when they differ from ``seeds`` (the rounds of a sequential design)."""
    matching: Matching | None = None
    """``--match``: how each arm's body was adjusted to the others' parameters or FLOPs (None: as the preset)."""
    made_by: str | None = None
    """the command that plans this comparison when it is part of a larger one (a rung of ``--ladder``)."""
    analysis: str = DEFAULT_ANALYSIS
    """``auto``, ``full``, ``light`` or ``none``: how much each run is analysed (``analysis_level``)."""
    metric: str | None = None
    """the tested metric that decides (``--metric``: ppl, bpb, bleu, vu, ppl-int8, ppl-int4; None: perplexity,
    or BLEU where the runs decode)."""
    test: bool = False
    """``--test``: every finished run is also evaluated on the test split, reported beside validation."""
    test_file: str | None = None
    """``--test-file``: the text the runs are tested on instead of their test split."""
    baseline: str = BASELINE
    """``--baseline``: the label every other strategy is tested against (one of ``strategies``)."""

    def seeds_of(self, label: str) -> int:
        return self.seed_counts.get(label, self.seeds)

    def strategy_text(self, label: str) -> str:
        """How ``label`` is written in --strategies."""
        if label not in self.variants:
            return label
        name, opts = self.variants[label]
        return ":".join([f"{label}={name}", *(f"{k}={_yaml_value(v)}"
                                              for k, v in opts.items())])  # fmt: skip

    def command(self) -> str:
        """The shell command that (re)creates this comparison."""
        if self.made_by is not None:
            return self.made_by
        listed = ",".join(self.strategy_text(label) for label in self.strategies)
        parts = ["embtie compare", self.preset, "--strategies", listed, "--seeds", str(self.seeds)]
        if self.first_seed:
            parts += ["--first-seed", str(self.first_seed)]
        if self.design is not None:
            parts += ["--until-decided", "--max-seeds", str(self.design.max_seeds)]
            if self.design.step != SequentialDesign.step:
                parts += ["--seeds-per-round", str(self.design.step)]
        if self.matching is not None:
            parts += ["--match", self.matching.mode]
            if self.matching.tolerance != DEFAULT_MATCH_TOLERANCE:
                parts += ["--match-tolerance", f"{self.matching.tolerance:g}"]
        if self.margins:
            parts += ["--margin", ",".join(f"{k}={m.spec()}" for k, m in self.margins.items())]
        if self.analysis != DEFAULT_ANALYSIS:
            parts += ["--analysis", self.analysis]
        if self.metric is not None:
            parts += ["--metric", self.metric]
        if self.test:
            parts += ["--test"]
        if self.test_file is not None:
            parts += ["--test-file", self.test_file]
        if self.baseline != BASELINE:
            parts += ["--baseline", self.baseline]
        parts += ["--out", str(self.out_dir), *self.overrides]
        return " ".join(parts)


@dataclass
class PlannedRun:
    strategy: str
    seed: int
    run_dir: Path
    cfg: RunConfig
    analysis: str = "full"
    """the analysis level of this run (one of ``run_diagnostics.LEVELS``; ``analysis_level``)."""

    @property
    def trained(self) -> bool:
        """Training has finished (summary.json says so)."""
        p = self.run_dir / "summary.json"
        if not p.is_file():
            return False
        try:
            return bool(json.loads(p.read_text(encoding="utf-8")).get("finished"))
        except json.JSONDecodeError:
            return False

    @property
    def done(self) -> bool:
        """Trained and analysed (at least at its level): nothing left to do for this run."""
        if not self.trained:
            return False
        loaded = run_diagnostics.read(self.run_dir)
        return loaded is not None and run_diagnostics.covers(loaded[0], self.analysis)


def analysis_level(choice: str, cfg: RunConfig) -> str:
    """The level ``choice`` (``--analysis``) gives a run: itself, or for ``auto`` ``full`` when the run's
    step cap is at least ``FULL_ANALYSIS_MIN_STEPS`` (or it has none) and ``light`` below."""
    if choice not in ANALYSIS_CHOICES:
        raise ConfigError(f"--analysis {choice!r} is not one of {', '.join(ANALYSIS_CHOICES)}")
    if choice != "auto":
        return choice
    steps = cfg.train.max_steps
    return "full" if steps is None or steps >= FULL_ANALYSIS_MIN_STEPS else "light"


def run_dir(out_dir: Path, strategy: str, seed: int) -> Path:
    return Path(out_dir) / "runs" / strategy / f"seed{seed}"


def _yaml_value(v: Any) -> str:
    """``v`` as one shell-safe YAML token (the inverse of ``parse_scalar`` in ``parse_strategy``):
    plain strings as they are, everything else as compact JSON (``[2000,10000]``, ``true``, ``0.5``)."""
    if isinstance(v, str) and parse_scalar(v) == v and " " not in v:
        return v
    return json.dumps(v, separators=(",", ":"))


def split_strategies(text: str) -> list[str]:
    """The entries of a --strategies list: split on commas outside brackets (``a,b=x:k=[1,2]``)."""
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return [i.strip() for i in items if i.strip()]


OPTION_PREFIX = "sharing.options."
"""a variant's dotted spelling of one of its strategy's options (``sharing.options.bias`` is ``bias``)."""


def parse_strategy(item: str) -> tuple[str, str, dict[str, Any]]:
    """(label, strategy name, options) of one --strategies entry: ``NAME`` or ``LABEL=NAME:key=value:...``
    (a labelled variant, e.g. ``adaptive-l2norm=adaptive:within=l2norm``; values are read by
    ``embtie.schema.parse_scalar``, as ``key=value`` overrides are: ``z_loss=1e-4`` is a number). A dotted
    key (``train.lr=3e-3``, ``model.n_layers=3``) is a config override of this arm alone (``plan``)."""
    head, *opts = item.split(":")
    label, _, name = head.partition("=")
    if not name:
        if opts:
            raise ConfigError(f"give a label to a strategy with options: LABEL={item} (e.g. {head}-variant={item})")
        return head, head, {}
    labels.check_label(label, item)
    options: dict[str, Any] = {}
    spelled: dict[str, str] = {}  # an option's name -> how this entry wrote it (bias or sharing.options.bias)
    for o in opts:
        key, eq, value = o.partition("=")
        if not eq or not key:
            raise ConfigError(f"{o!r} in {item!r} is not key=value; write LABEL=NAME:key=value:key=value")
        if key in options:
            raise ConfigError(f"{key} is given twice in {item!r}; give each key of a variant once")
        option = key.removeprefix(OPTION_PREFIX)
        if option in spelled:
            raise ConfigError(
                f"{spelled[option]} and {key} in {item!r} are the same option of the strategy, given twice; give it "
                f"once (as {option}=...)"
            )
        spelled[option] = key
        options[key] = parse_scalar(value)
    return label, name, options



def plan(spec: CompareSpec, *, folders: bool = True) -> list[PlannedRun]:
    """Validated configs of every strategy x seed (a ConfigError names the first bad one: a config, a label
    (``labels``), a variant setting what every arm shares or two arms alike (``invariants``), a metric the
    task lacks (``metric_fit``), an optimizer reaching nothing (``optimizer_reach``)); with ``folders``,
    every run folder that exists already must hold its planned run (``check_reused``; ``embtie plan``, which
    trains nothing, passes False)."""
    from embtie import sharing

    if spec.seeds < 1:
        raise ConfigError(f"--seeds {spec.seeds} must be >= 1")
    if spec.first_seed < 0:
        raise ConfigError(f"--first-seed {spec.first_seed} must be >= 0")
    if not spec.strategies:
        raise ConfigError("--strategies is empty; give e.g. --strategies tied,untied")
    for label in spec.strategies:
        sharing.get(spec.variants.get(label, (label, {}))[0])  # ConfigError listing the valid names
        if label in spec.variants and label in sharing.names():
            name = spec.variants[label][0]
            raise ConfigError(
                f"--strategies {spec.strategy_text(label)}: the label {label!r} is the name of a strategy, so the "
                f"report would call this {name} variant {label}; give it a label of its own, e.g. {name}-variant"
            )
    if len(set(spec.strategies)) != len(spec.strategies):
        raise ConfigError(f"--strategies lists a strategy twice: {','.join(spec.strategies)}")
    for label in spec.variants:
        labels.check_label(label, spec.strategy_text(label))
    labels.check_distinct(spec.strategies)
    invariants.check_variants(spec.variants, spec.strategy_text)
    user_opts = [o for o in spec.overrides if o.split("=", 1)[0].startswith("sharing.")]
    if any(o.split("=", 1)[0] == "sharing.name" for o in user_opts):
        raise ConfigError("do not set sharing.name in a comparison; list strategies with --strategies a,b,c")
    runs = []
    for label in spec.strategies:
        name, opts = spec.variants.get(label, (label, {}))
        # dotted keys of a variant are config overrides of its runs alone (after the comparison's own)
        arm = [f"{k}={_yaml_value(v)}" for k, v in opts.items() if "." in k]
        variant_opts = {k: v for k, v in opts.items() if "." not in k}
        if any(o.split("=", 1)[0] in ("sharing.name", "seed") for o in arm):
            raise ConfigError(f"--strategies {spec.strategy_text(label)}: sharing.name and seed come from the "
                              "comparison itself; give the strategy after '=' and seeds with --first-seed")  # fmt: skip
        base = load_config(spec.preset, [o for o in spec.overrides if o not in user_opts])
        # The preset's options are conventions of its model (sqrt(d) embedding scale, uniform init,
        # softmax bias): every strategy that accepts an option gets it, so that strategies differ only
        # in their output layer. Options the strategy does not accept (another strategy's own, such
        # as proj_reg) are dropped.
        accepted = set(sharing.accepted_options(name))
        options = {k: v for k, v in base.sharing.options.items() if base.sharing.name == name or k in accepted}
        for k, v in STRATEGY_OPTIONS.get(name, {}).items():
            options.setdefault(k, v)
        options.update(variant_opts)
        for seed in range(spec.first_seed, spec.first_seed + spec.seeds_of(label)):
            cfg = base.replace({"sharing.name": name, "sharing.options": options, "seed": seed})
            cfg = cfg.replace(user_opts) if user_opts else cfg
            cfg = cfg.replace(arm) if arm else cfg  # after the strategy is set: head_* keys need its head
            if arm and seed == spec.first_seed:  # a key the arm's optimizer never reads: the arm would not differ
                try:
                    cfg.train.check_given([o.split("=", 1)[0] for o in arm])
                except ConfigError as e:
                    raise ConfigError(f"--strategies {spec.strategy_text(label)}: {e}") from None
            cfg = cfg.replace({"train.progress": False})
            cfg = cfg.replace(spec.matching.overrides_of(label)) if spec.matching is not None else cfg  # --match
            level = analysis_level(spec.analysis, cfg)
            runs.append(PlannedRun(label, seed, run_dir(spec.out_dir, label, seed), cfg, level))
    _check_arms(spec, runs)
    for r in runs if folders else []:
        check_reused(r, spec)
    return runs


def _check_arms(spec: CompareSpec, runs: list[PlannedRun]) -> None:
    """The arms against each other, the metrics and the optimizer (one config per arm: its first seed's)."""
    if not runs:
        return
    arms: dict[str, RunConfig] = {}
    for r in runs:
        arms.setdefault(r.strategy, r.cfg)
    invariants.check_distinct_arms(arms, spec.strategy_text, spec.matching)
    names = {label: spec.variants.get(label, (label, {}))[0] for label in spec.strategies}
    metric_fit.check_metrics(spec.metric, spec.margins, names, runs[0].cfg.task, spec.preset)
    optimizer_reach.check_optimizer_reach(arms)


PLACEMENT_KEYS = frozenset({"train.device", "train.threads"})
"""where a run trains, not what it is: a finished run made on another device or thread count is reused (a
comparison continued on a GPU keeps the CPU's finished runs; CPU kernels differ between machines anyway)."""

_TELLING_KEYS = ("task", "data.dataset", "model.name", "sharing.name", "seed")
"""config keys named first when a reused run folder differs in several (else the first in key order)."""


def check_reused(r: PlannedRun, spec: CompareSpec) -> None:
    """A run folder that exists already must hold the run the comparison asks for (its preset, strategy, seed
    and overrides): otherwise a ConfigError naming the first difference, so that another comparison's runs are
    never reported (or skipped as trained) under this one's name."""
    from embtie.config import config_from_dict, read_yaml_mapping
    from embtie.training.preparation import config_diff

    path = r.run_dir / "config.yaml"
    if not path.is_file():
        return
    try:
        saved = config_from_dict(read_yaml_mapping(path, "run config"))
    except ConfigError as e:
        raise ConfigError(f"{r.run_dir} cannot be reused by this comparison: {e}") from None
    diff = config_diff(r.cfg.to_dict(), saved.to_dict())
    placed = [d for d in diff if d.split(":", 1)[0] in PLACEMENT_KEYS]
    if placed and r.trained:  # a finished run counts wherever it ran (its report names the machine)
        diff = [d for d in diff if d not in placed]
    elif placed and len(placed) == len(diff):
        key, _, values = placed[0].partition(": ")
        asked, _, found = (v.strip("'") for v in values.partition(" -> "))
        raise ConfigError(
            f"{r.run_dir} is an unfinished run started with {key}={found} ({asked} here): finish it there (repeat "
            f"the command with {key}={found}), or delete that folder to train the run here; finished runs are "
            "reused on any device"
        )
    if diff:
        telling = [d for d in diff if d.split(":", 1)[0] in _TELLING_KEYS]  # what a reader recognises first
        key, _, values = (telling or diff)[0].partition(": ")
        asked, _, found = values.partition(" -> ")
        raise ConfigError(
            f"{r.run_dir} holds a run of another config than this comparison asks for ({key} is {found} there, "
            f"{asked} here: {spec.preset} with these overrides); compare into a new --out, or repeat the command "
            "that made that folder"
        )
