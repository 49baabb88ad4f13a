"""A comparison's design is fixed before its runs (comparison.design_file): written once with its hash,
refused in one line when the options make another design, recorded by each run, and read back as
confirmatory or exploratory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embtie.comparison.design_file import (
    DESIGN_FILE,
    Design,
    fix_design,
    read_design,
    record_planned,
    status_line,
)
from embtie.comparison.grid import CompareSpec
from embtie.decisions import Margin, SequentialDesign
from embtie.errors import ConfigError


def _spec(**kw) -> CompareSpec:
    base = dict(preset="ptb-gpt-tiny", strategies=["tied", "untied", "l2norm"], seeds=4,
                design=SequentialDesign(first=4, step=2, max_seeds=10), overrides=["train.max_steps=50"])  # fmt: skip
    return CompareSpec(**{**base, **kw})


def test_the_hash_follows_every_setting_a_verdict_depends_on():
    ref = Design.of(_spec()).hash
    assert Design.of(_spec()).hash == ref and len(ref) == 12
    changed = [
        _spec(design=SequentialDesign(first=4, step=2, max_seeds=12)),
        _spec(margins={"valid_ppl": Margin(0.5, relative=True)}),
        _spec(baseline="untied"),
        _spec(metric="bpb"),
        _spec(first_seed=10),
        _spec(overrides=["train.max_steps=60"]),
        _spec(strategies=["tied", "untied"]),
    ]
    assert all(Design.of(s).hash != ref for s in changed)


def test_written_before_the_runs_then_refused_for_another_design(tmp_path: Path):
    fixed = fix_design(tmp_path, Design.of(_spec()), runs_present=0)
    saved = json.loads((tmp_path / DESIGN_FILE).read_text())
    assert saved["hash"] == fixed.hash and saved["runs_before"] == 0 and saved["design"]["looks"] == [4, 6, 8, 10]
    assert fix_design(tmp_path, Design.of(_spec()), runs_present=3) == fixed  # the same design: kept as fixed
    beside = fix_design(tmp_path, Design.of(_spec(strategies=["tied", "untied"])), runs_present=0)  # strategies only
    assert (tmp_path / f"design-{beside.hash}.json").is_file() and read_design(tmp_path) == fixed
    with pytest.raises(ConfigError) as err:
        fix_design(tmp_path, Design.of(_spec(design=SequentialDesign(first=4, step=2, max_seeds=12))), runs_present=0)
    line = str(err.value)
    assert "\n" not in line and fixed.hash in line and "looks" in line and "--out" in line


def test_a_report_says_confirmatory_only_when_the_design_came_first(tmp_path: Path):
    runs = [tmp_path / "runs" / s / "seed0" for s in ("tied", "untied")]
    assert status_line(tmp_path, runs).startswith("exploratory: this folder has no design file")
    fixed = fix_design(tmp_path, Design.of(_spec()), runs_present=0)
    record_planned(tmp_path, runs, fixed)
    assert not any(r.exists() for r in runs)  # the ledger is the comparison's: no run folder is made
    line = status_line(tmp_path, runs)
    assert line.startswith(f"confirmatory: design {fixed.hash} fixed at {fixed.fixed_at}") and "its 2 runs" in line
    other = Design.of(_spec(baseline="untied"))
    assert status_line(tmp_path, runs, family=other.content()).startswith("exploratory: this report's tests (baseline")
    late = tmp_path / "late"
    fix_design(late, Design.of(_spec()), runs_present=5)
    assert status_line(late, []).startswith("exploratory: 5 runs were in the folder before design")
    stray = tmp_path / "runs" / "l2norm" / "seed0"
    assert status_line(tmp_path, [*runs, stray]).startswith("exploratory: some runs were not started under design")


def test_a_damaged_design_file_reads_as_none(tmp_path: Path):
    (tmp_path / DESIGN_FILE).write_text("{not json")
    assert read_design(tmp_path) is None
