"""Every metric a comparison tests, declared once: its result column, its ``--metric`` name, its label and
direction, its default margin, how many digits the report prints, the tasks that have it, the tasks it
decides by default, and (where it has one) its per-unit values for the paired bootstrap.

Verdicts (``embtie.comparison.verdicts``), results (``embtie.comparison.results``), the report's sections,
the margins and the ``--metric`` / ``--margin`` help all read ``METRICS``. A new metric is one
``Metric`` here plus the code that computes its column of ``ResultRow``.

A metric's value of a run is the ``ResultRow`` field named by its key, and a strategy's values are those
of its rows: this module reads rows by name, so it sits below ``embtie.comparison`` and imports nothing of
it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from embtie import stats
from embtie.decisions.margins import Margin
from embtie.errors import ConfigError

Bootstrap = Callable[[np.ndarray, np.ndarray, bool], dict[str, Any]]
"""(system's per-unit values, baseline's, the runs caption images) -> ``stats.paired_bootstrap``'s result."""


@dataclass(frozen=True)
class UnitValues:
    """A metric's per-unit values (validation batches, sentences, images) and the paired bootstrap over them."""

    arrays: str
    """the ``RunArrays`` field that holds them."""
    bootstrap: Bootstrap


@dataclass(frozen=True)
class Metric:
    """One tested metric."""

    key: str
    """its ``ResultRow`` column (and its key in results.json's verdicts, and in ``--margin``)."""
    label: str
    higher_is_better: bool
    digits: int
    """decimals of its values and differences in the report."""
    tasks: tuple[str, ...]
    """the tasks whose runs have it."""
    about: str = ""
    """what ``--metric FLAG`` means, for the help ("" : not choosable)."""
    flag: str | None = None
    """its ``--metric`` name (None: never the deciding metric, e.g. a test-split metric)."""
    margin: Margin | None = None
    """its default margin of equivalence (None: ``margin_of``'s)."""
    margin_of: str = ""
    """the metric whose margin it uses when it has none of its own ("" : its own)."""
    primary_in: tuple[str, ...] = ()
    """the tasks it decides when ``--metric`` chooses none."""
    held_out_of: str | None = None
    """the validation metric this one measures on the held-out test split (``--test``: reported, never deciding)."""
    quantized: str | None = None
    """the format both vocabulary tables are fake-quantized to before it is measured (``--metric`` only)."""
    captioning_label: str | None = None
    """its label in a captioning comparison (None: ``label``)."""
    units: UnitValues | None = None

    @property
    def margin_key(self) -> str:
        """The key of the margin it is tested with."""
        return self.margin_of or self.key

    def value(self, row: Any) -> float | None:
        """Its value in one run's ``ResultRow`` (None: the run does not have it)."""
        v = getattr(row, self.key, None)
        return None if v is None else float(v)

    def values(self, rows: Iterable[Any], strategy: str) -> list[float]:
        """Its values over ``strategy``'s rows, rows without it left out."""
        return [v for r in rows if r.strategy == strategy and (v := self.value(r)) is not None]

    def label_in(self, captioning: bool) -> str:
        return self.captioning_label if captioning and self.captioning_label else self.label


def _perplexity(system: np.ndarray, baseline: np.ndarray, captioning: bool) -> dict[str, Any]:
    return stats.perplexity_bootstrap(system, baseline)


def _bleu(system: np.ndarray, baseline: np.ndarray, captioning: bool) -> dict[str, Any]:
    return stats.bleu_bootstrap(system, baseline, smooth="none" if captioning else "exp")  # as the COCO scorer


def _vocab_usage(system: np.ndarray, baseline: np.ndarray, captioning: bool) -> dict[str, Any]:
    return stats.vocab_usage_bootstrap(system, baseline)


LM = ("lm",)
DECODING = ("translation", "captioning")
ALL_TASKS = (*LM, *DECODING)
_QUANTIZED_ABOUT = (
    "perplexity with the input table and output matrix fake-quantized per row to int8, a shared matrix once, "
    "as `embtie analyze --quantize` does; measured for every finished run when the comparison is reported; "
    "margin: valid_ppl's"
)

METRICS: tuple[Metric, ...] = (
    Metric(
        key="valid_ppl", label="perplexity", higher_is_better=False, digits=1, tasks=ALL_TASKS,
        flag="ppl", about="perplexity per token", margin=Margin(1.0, relative=True), primary_in=LM,
        units=UnitValues("valid_units", _perplexity),
    ),
    Metric(
        key="bleu", label="BLEU", captioning_label="BLEU-4", higher_is_better=True, digits=2, tasks=DECODING,
        flag="bleu", about="BLEU; BLEU-4 for captioning", margin=Margin(0.5), primary_in=DECODING,
        units=UnitValues("bleu_stats", _bleu),
    ),
    Metric(
        key="vu", label="distinct words", higher_is_better=True, digits=0, tasks=DECODING,
        flag="vu", about="vocabulary usage: distinct words in the outputs", margin=Margin(5.0, relative=True),
        units=UnitValues("word_incidence", _vocab_usage),
    ),
    Metric(
        key="valid_bpb", label="bits per byte", higher_is_better=False, digits=3, tasks=LM,
        flag="bpb", about="bits per byte of the original text: comparable across tokenizers and vocabularies",
        margin=Margin(0.2, relative=True),
    ),
    Metric(
        key="valid_ppl_int8", label="perplexity with int8 tables", higher_is_better=False, digits=1, tasks=LM,
        flag="ppl-int8", about=_QUANTIZED_ABOUT, margin_of="valid_ppl", quantized="int8",
    ),
    Metric(
        key="valid_ppl_int4", label="perplexity with int4 tables", higher_is_better=False, digits=1, tasks=LM,
        flag="ppl-int4", about="the same with int4", margin_of="valid_ppl", quantized="int4",
    ),
    Metric(
        key="test_ppl", label="test perplexity", higher_is_better=False, digits=1, tasks=ALL_TASKS,
        margin_of="valid_ppl", held_out_of="valid_ppl",
    ),
    Metric(
        key="test_bpb", label="test bits per byte", higher_is_better=False, digits=3, tasks=LM,
        margin_of="valid_bpb", held_out_of="valid_bpb",
    ),
)  # fmt: skip
"""Every tested metric, in report order. Margins: perplexity ±1% (about the run-to-run spread of a
well-seeded LM comparison), BLEU ±0.5 points (below what MT papers report as a gain; captioning's BLEU-4
is tested under the same key), vocabulary usage ±5% of the baseline's distinct words, bits per byte ±0.2%
(bits per byte is proportional to the loss, and perplexity ±1% is a loss difference of 0.01 nats, 0.2% of
a word model's loss of about 5 nats). The test split's and the quantized metrics use their validation
metric's margin."""

BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}
BY_FLAG: dict[str, Metric] = {m.flag: m for m in METRICS if m.flag is not None}
DEFAULT_MARGINS: dict[str, Margin] = {m.key: m.margin for m in METRICS if m.margin is not None}
"""metric key -> its default margin (the metrics that have their own)."""


def metric(key: str) -> Metric:
    """The declared metric of ``key`` (a KeyError names a metric nobody declared)."""
    return BY_KEY[key]


def chosen(name: str) -> Metric:
    """The metric ``--metric NAME`` decides on (NAME: its flag or its key; a ConfigError names the choices)."""
    m = BY_FLAG.get(name) or next((m for m in BY_FLAG.values() if m.key == name), None)
    if m is None:
        raise ConfigError(f"--metric {name!r} is not one of {', '.join(BY_FLAG)}")
    return m


def primary(rows: Sequence[Any], name: str | None = None) -> Metric:
    """The metric that decides (the one a sequential design stops on): ``--metric NAME``'s, else the default
    of the runs' task: of the metrics declared primary somewhere that the rows have, the one the fewest
    tasks have (BLEU where runs decode: their rows have perplexity too), perplexity when rows have none."""
    if name is not None:
        return chosen(name)
    return primary_among([m.key for m in METRICS if any(m.value(r) is not None for r in rows)])


def primary_among(keys: Collection[str]) -> Metric:
    """The default deciding metric of runs that have the metrics ``keys`` (see ``primary``)."""
    have = [m for m in METRICS if m.primary_in and m.key in keys]
    return min(have, key=lambda m: len(m.tasks), default=BY_KEY["valid_ppl"])


def held_out(key: str) -> Metric | None:
    """The test-split metric of the validation metric ``key`` (None: it has none)."""
    return next((m for m in METRICS if m.held_out_of == key), None)


def margins_with(changed: Mapping[str, Margin]) -> dict[str, Margin]:
    """Every metric's margin (``DEFAULT_MARGINS``) with ``changed`` (``--margin``) replacing some."""
    return {**DEFAULT_MARGINS, **changed}


def metric_help() -> str:
    """``--metric``'s help: every flag and what it means."""
    choices = "; ".join(f"{m.flag} ({m.about})" for m in BY_FLAG.values())
    return (f"the tested metric that decides (and that --until-decided stops on): {choices}. Default: "
            f"{_defaults_text()}. Every metric the runs have is still tested and reported")  # fmt: skip


def _defaults_text() -> str:
    by_task = {m.flag: ", ".join(m.primary_in) for m in METRICS if m.primary_in}
    return "; ".join(f"{flag} for {tasks}" for flag, tasks in by_task.items())


def margin_help() -> str:
    """``--margin``'s help: the default of every metric with its own margin (% escaped for argparse)."""
    defaults = ",".join(f"{k}={m.spec()}" for k, m in DEFAULT_MARGINS.items()).replace("%", "%%")
    borrowed = ", ".join(f"{m.key} uses {m.margin_of}'s" for m in METRICS if m.margin_of)
    return ("margins of practical equivalence: a strategy is 'equivalent' to the baseline when its paired-seed "
            f"interval lies inside ± the margin (defaults: {defaults}; %% = percent of the baseline's value; "
            f"{borrowed})")  # fmt: skip
