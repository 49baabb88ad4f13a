"""The verdicts of a comparison: for every tested metric (perplexity; BLEU and vocabulary usage where
the runs decode), every strategy against the baseline from the seeds both have, paired by seed
(``embtie.decisions``): better, worse, equivalent within the metric's margin, or undecided with the
seeds that would decide it.

Without a sequential design every comparison is one look at level alpha (Holm over the strategies);
with one (``embtie compare --until-decided``) the verdicts are replayed look by look, so a comparison
decided at an earlier look keeps that verdict. The primary metric (perplexity for language models,
BLEU for translation and captioning) is the one the sequential design stops on."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

from embtie.analysis.json_records import Record
from embtie.comparison.records import ResultRow
from embtie.decisions import DEFAULT_MARGINS, Decision, Margin, SequentialDesign, decide_all, paired_difference
from embtie.decisions.sequential import replay
from embtie.errors import ConfigError


@dataclass(frozen=True)
class TestedMetric:
    """A per-seed value of a run that the comparison tests against the baseline."""

    key: str
    """the result column."""
    label: str
    higher_is_better: bool
    value: Callable[[ResultRow], float | int | None]
    margin_key: str = ""
    """the key of its margin ("" : ``key``); a test-split metric uses its validation metric's margin."""

    @property
    def margin_of(self) -> str:
        return self.margin_key or self.key


TESTED = (
    TestedMetric("valid_ppl", "perplexity", False, lambda r: r.valid_ppl),
    TestedMetric("bleu", "BLEU", True, lambda r: r.bleu),
    TestedMetric("vu", "distinct words", True, lambda r: r.vu),
    TestedMetric("valid_bpb", "bits per byte", False, lambda r: r.valid_bpb),
    TestedMetric("valid_ppl_int8", "perplexity, int8 tables", False, lambda r: r.valid_ppl_int8, "valid_ppl"),
    TestedMetric("valid_ppl_int4", "perplexity, int4 tables", False, lambda r: r.valid_ppl_int4, "valid_ppl"),
    TestedMetric("test_ppl", "test perplexity", False, lambda r: r.test_ppl, "valid_ppl"),
    TestedMetric("test_bpb", "test bits per byte", False, lambda r: r.test_bpb, "valid_bpb"),
)
"""Every metric a comparison tests where the runs have it. The test-split ones (``embtie compare --test``)
are reported beside the validation ones and never decide anything: no sequential look reads them. The
quantized perplexities are measured only when ``--metric`` chooses one (``QUANTIZED``), and use the
perplexity margin."""

METRIC_NAMES = {
    "ppl": "valid_ppl",
    "bpb": "valid_bpb",
    "bleu": "bleu",
    "vu": "vu",
    "ppl-int8": "valid_ppl_int8",
    "ppl-int4": "valid_ppl_int4",
}
"""``--metric`` NAME -> the tested metric that decides (the primary metric; validation only)."""

QUANTIZED = {"valid_ppl_int8": "int8", "valid_ppl_int4": "int4"}
"""tested metric -> the format both vocabulary tables are fake-quantized to (``embtie.analysis.quantization``)."""


@dataclass(kw_only=True)
class MetricVerdicts(Record):
    """The verdicts of one tested metric."""

    metric: str
    label: str
    higher_is_better: bool
    margin: float
    relative: bool
    """the margin is a percentage of the baseline (and every Δ a percent difference)."""
    design: str
    """the looks and the level every test ran at."""
    decisions: dict[str, dict]
    """strategy -> the ``embtie.decisions.Decision`` as a JSON object."""

    def decision(self, strategy: str) -> Decision | None:
        d = self.decisions.get(strategy)
        if d is None:
            return None
        return Decision(**{**d, "ci": tuple(d["ci"]), "tost_ci": tuple(d["tost_ci"])})

    def margin_text(self) -> str:
        return Margin(self.margin, self.relative).text()


def primary_metric(rows: Sequence[ResultRow], chosen: str | None = None) -> str:
    """The metric that decides (the one a sequential design stops on): ``chosen`` (``--metric``, a key of
    ``METRIC_NAMES`` or a tested validation metric), else BLEU when the runs decode (translation,
    captioning), else perplexity."""
    if chosen is not None:
        return tested_key(chosen)
    return "bleu" if any(r.bleu is not None for r in rows) else "valid_ppl"


def tested_key(name: str) -> str:
    """The tested metric ``--metric NAME`` decides on (a ConfigError naming the choices)."""
    key = METRIC_NAMES.get(name, name)
    if key not in METRIC_NAMES.values():
        raise ConfigError(f"--metric {name!r} is not one of {', '.join(METRIC_NAMES)}")
    return key


def paired_values(
    rows: Sequence[ResultRow], strategy: str, baseline: str, metric: TestedMetric
) -> tuple[list[float], list[float]]:
    """The strategy's and the baseline's per-seed values over the seeds both have, in seed order."""
    mine = {r.seed: metric.value(r) for r in rows if r.strategy == strategy}
    base = {r.seed: metric.value(r) for r in rows if r.strategy == baseline}
    seeds = sorted(s for s in mine if s in base and mine[s] is not None and base[s] is not None)
    return [float(mine[s]) for s in seeds], [float(base[s]) for s in seeds]  # type: ignore[arg-type]


def _baseline_series(
    rows: Sequence[ResultRow], baseline: str, metric: TestedMetric, strategies: Sequence[str]
) -> list[float]:
    """The baseline's values in seed order; a sequential design pairs seed i of every strategy with the
    baseline's seed i, so each strategy's seeds must be the first of the baseline's."""
    base = sorted((r.seed, metric.value(r)) for r in rows if r.strategy == baseline)
    seeds = [s for s, _ in base]
    for name in strategies:
        mine = sorted(r.seed for r in rows if r.strategy == name)
        if mine != seeds[: len(mine)]:
            raise ConfigError(
                f"a sequential comparison pairs seeds in order, but {name} has seeds {mine} and the baseline "
                f"{seeds}; run the comparison again to train the missing seeds"
            )
    return [float(v) if v is not None else float("nan") for _, v in base]


def metric_verdicts(
    rows: Sequence[ResultRow],
    baseline: str,
    metric: TestedMetric,
    margin: Margin,
    design: SequentialDesign | None,
    alpha: float = 0.05,
) -> MetricVerdicts | None:
    """The verdicts of ``metric`` for every strategy with >= 2 seeds paired with the baseline's (None
    when no strategy has them)."""
    strategies = [s for s in dict.fromkeys(r.strategy for r in rows) if s != baseline]
    pairs = {s: paired_values(rows, s, baseline, metric) for s in strategies}
    pairs = {s: p for s, p in pairs.items() if len(p[0]) >= 2}
    if margin.relative and any(b == 0 for _, base in pairs.values() for b in base):
        return None  # a percent of nothing: a baseline of 0 (no distinct words) has no relative difference
    if not pairs:
        return None
    if design is None:
        diffs = {s: paired_difference(a, b, margin) for s, (a, b) in pairs.items()}
        decisions = decide_all(diffs, metric.higher_is_better, alpha)
        n = max(d.n for d in decisions.values())
        k = len(decisions)
        text = f"one look at {n} paired seeds, level {alpha:g}, Holm over {k} strateg{'y' if k == 1 else 'ies'}"
    else:
        longest = max(pairs.values(), key=lambda p: len(p[1]))[1]  # the baseline's seeds, in order
        decisions = replay(design, {s: a for s, (a, _) in pairs.items()}, longest, margin, metric.higher_is_better)
        text = design.description() + ", Holm over the strategies at each look"
    return MetricVerdicts(metric=metric.key, label=metric.label, higher_is_better=metric.higher_is_better,
                          margin=margin.value, relative=margin.relative, design=text,
                          decisions={s: asdict(d) for s, d in decisions.items()})  # fmt: skip


def all_verdicts(
    rows: Sequence[ResultRow],
    baseline: str,
    margins: Mapping[str, Margin] | None = None,
    design: SequentialDesign | None = None,
    alpha: float = 0.05,
) -> dict[str, MetricVerdicts]:
    """The verdicts of every tested metric the runs have (``margins`` default: ``DEFAULT_MARGINS``)."""
    margins = {**DEFAULT_MARGINS, **(margins or {})}
    out = {}
    for metric in TESTED:
        v = metric_verdicts(rows, baseline, metric, margins[metric.margin_of], design, alpha)
        if v is not None:
            out[metric.key] = v
    return out
