"""Every metric declared in ``embtie.metrics`` walks through a tiny comparison built from fake run records
(no training): it gets its verdict, a line in the report, and its place in ``embtie compare --help``; a
metric with per-unit values gets its paired bootstrap. A newly declared metric is covered here with no
other edit (only a new kind of per-unit values needs a builder in ``UNITS``)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np
import pytest

import comparison_records as cr
from embtie import metrics, stats
from embtie.commands import compare
from embtie.comparison.results import unit_bootstraps
from embtie.errors import ConfigError
from embtie.metrics import METRICS, Metric
from embtie.reporting.document import Table
from embtie.reporting.sections.summary import plain_summary
from embtie.reporting.sections.verdicts import verdicts

BASE = [100.0, 104.0, 98.0, 102.0, 96.0]
SEEDS = range(len(BASE))


def _values(m: Metric) -> dict[str, list[float]]:
    """tied's values and a strategy's that are 30% worse on ``m``, every seed (clearly decided)."""
    worse = [v * (0.7 if m.higher_is_better else 1.3) for v in BASE]
    return {"tied": BASE, "other": worse}


def _rows(m: Metric) -> list:
    """Rows with ``m``'s values (and its validation metric's, for a test-split metric)."""
    keys = [m.key] + ([m.held_out_of] if m.held_out_of else [])
    return [cr.result_row(n, s, **{k: v[s] for k in keys}) for n, v in _values(m).items() for s in SEEDS]


def _context(m: Metric):
    rows = _rows(m)
    per_run = [cr.run(r.strategy, r.seed) for r in rows]
    c = cr.comparison(per_run, seeds=len(BASE), rows=rows)
    c.metric = m.held_out_of or m.key
    return cr.context(c)


@pytest.mark.parametrize("m", METRICS, ids=lambda m: m.key)
def test_every_metric_gets_its_verdict(m: Metric):
    v = _context(m).comparison.verdicts[m.key]
    d = v.decision("other")
    assert d is not None and d.verdict == "worse" and d.n == len(BASE)
    margins = metrics.margins_with({})
    assert (v.margin, v.relative) == (margins[m.margin_key].value, margins[m.margin_key].relative)
    assert v.label == m.label and v.higher_is_better == m.higher_is_better


@pytest.mark.parametrize("m", METRICS, ids=lambda m: m.key)
def test_every_metric_has_a_line_in_the_report(m: Metric):
    ctx = _context(m)
    tables = [b for b in verdicts(ctx) if isinstance(b, Table)]
    assert any(t.caption.startswith(f"{m.label} ({'higher' if m.higher_is_better else 'lower'} is better)")
               for t in tables), [t.caption[:40] for t in tables]  # fmt: skip
    lines = plain_summary(ctx)
    if m.held_out_of is None:
        mean = f"{sum(BASE) / len(BASE):.{m.digits}f}"
        assert lines[0].startswith(f"Baseline `tied`: {m.label} {mean}"), lines[0]
        assert any(line.startswith("`other` is worse than the baseline") for line in lines)
    else:  # beside its validation metric, never deciding
        assert any(line.startswith("On the test split") and "worse: other" in line for line in lines), lines


def _help() -> str:
    parser = argparse.ArgumentParser()
    compare.add_arguments(parser)
    return "".join(parser.format_help().split())  # no whitespace: argparse wraps lines, also at hyphens


@pytest.mark.parametrize("m", METRICS, ids=lambda m: m.key)
def test_every_metric_is_in_the_help(m: Metric):
    text = _help()
    if m.flag is not None:
        assert "".join(f"{m.flag} ({m.about})".split()) in text
        assert metrics.chosen(m.flag) is m
    else:
        with pytest.raises(ConfigError, match="is not one of"):
            metrics.chosen(m.key)
    if m.margin is not None:
        assert f"{m.key}={m.margin.spec()}" in text
    else:
        assert f"{m.key}uses{m.margin_of}'s" in text


def _ppl_units(rng: np.random.Generator, shift: float) -> np.ndarray:
    tokens = rng.integers(50, 100, size=30).astype(float)
    return np.stack([tokens * (5.0 + shift + rng.normal(0, 0.1, size=30)), tokens], axis=1)


def _bleu_units(rng: np.random.Generator, shift: float) -> np.ndarray:
    refs = ["a dog runs on the grass", "a man rides a red bike", "two cats sleep on a sofa"] * 10
    hyps = [r if rng.random() > shift else "a thing" for r in refs]
    return stats.bleu_sentence_stats(hyps, refs)


def _incidence_units(rng: np.random.Generator, shift: float) -> np.ndarray:
    return (rng.random((30, 40)) < 0.1 + shift).astype(np.float64)


UNITS: dict[str, Callable[[np.random.Generator, float], np.ndarray]] = {
    "valid_units": _ppl_units,
    "bleu_stats": _bleu_units,
    "word_incidence": _incidence_units,
}
"""``RunArrays`` field -> per-unit values of a run (``shift`` > 0: a different system)."""


@pytest.mark.parametrize("m", [m for m in METRICS if m.units is not None], ids=lambda m: m.key)
def test_every_metric_with_units_gets_its_bootstrap(m: Metric):
    assert m.units is not None
    rng = np.random.default_rng(0)
    per_run = [cr.run(n, s) for n in ("tied", "other") for s in range(2)]
    for p in per_run:
        p.arrays.valid_units = p.arrays.bleu_stats = p.arrays.word_incidence = None
        setattr(p.arrays, m.units.arrays, UNITS[m.units.arrays](rng, 0.3 if p.strategy == "other" else 0.0))
    found = unit_bootstraps(per_run, "tied", captioning=False)
    assert list(found) == [m.key] and list(found[m.key]) == ["other"]
    b = found[m.key]["other"]
    assert b.n_seeds == 2 and b.n_units == 30 and 0 < b.p_value <= 1 and b.delta_ci[0] <= b.delta_ci[1]
    assert not math.isnan(b.delta)


def test_declarations_are_consistent():
    keys = [m.key for m in METRICS]
    assert len(set(keys)) == len(keys)
    for m in METRICS:
        assert (m.margin is None) == bool(m.margin_of), m.key  # a margin of its own, or another's
        assert m.margin_of in ("", *metrics.DEFAULT_MARGINS) and set(m.primary_in) <= set(m.tasks)
        assert (m.flag is None) == (m.about == ""), m.key
    assert metrics.primary([]).key == "valid_ppl"
    assert metrics.primary([cr.result_row("tied", 0, valid_ppl=9.0, bleu=20.0)]).key == "bleu"
    assert metrics.primary_among({"valid_ppl", "vu", "bleu"}).key == "bleu"  # a saved results.json's verdicts
    assert metrics.primary_among({"valid_ppl", "valid_bpb"}).key == "valid_ppl"
