"""Ladder values read once, as the type of their key (``ladder.values``), and rung folders that two values
never share (``ladder.spec.folder_name``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from embtie.comparison import CompareSpec
from embtie.errors import ConfigError
from embtie.ladder import driver, spec, values


def test_values_are_written_as_their_keys_type():
    ladder = values.normalized(spec.parse("model.n_layers=01,+2", extrapolate="4.0"), "ptb-gpt-tiny", [])
    assert ladder.values == ("1", "2") and ladder.extrapolate == ("4",)
    assert [r.folder for r in ladder.rungs()] == ["n_layers-1", "n_layers-2"]
    assert ladder.text() == "model.n_layers=1,2"
    floats = values.normalized(spec.parse("model.dropout=1e-1,0.20"), "ptb-gpt-tiny", [])
    assert floats.values == ("0.1", "0.2")
    sizes = spec.parse("size=xs,s")
    assert values.normalized(sizes, "ptb-gpt-tiny", []) is sizes  # names, not numbers


@pytest.mark.parametrize("spellings", ["1,1.0", "1,01", "1,+1", "2,1,2.0"])
def test_one_value_in_two_spellings_is_refused(spellings):
    with pytest.raises(ConfigError, match=r"--ladder gives model\.n_layers=\S+ and model\.n_layers=\S+, both"):
        values.normalized(spec.parse(f"model.n_layers={spellings}"), "ptb-gpt-tiny", [])


def test_the_ladder_plan_carries_the_typed_values():
    base = CompareSpec(preset="ptb-gpt-tiny", strategies=["tied", "untied"], seeds=1, out_dir=Path("lad"))
    plan = driver.plan_ladder(base, spec.parse("model.n_layers=+1,02", extrapolate="8.0"))
    assert [b.rung.value for b in plan.budgets] == ["1", "2"] and [b.rung.value for b in plan.beyond] == ["8"]
    assert [s.out_dir for s in plan.specs] == [Path("lad/rungs/n_layers-1"), Path("lad/rungs/n_layers-2")]
    assert "--ladder model.n_layers=1,2 --extrapolate 8" in plan.command


def test_two_files_with_one_sanitized_name_get_two_folders():
    ladder = spec.Ladder("model.hf", ("cfg/gpt.json", "cfg_gpt.json", "cfg gpt.json", "gpt2-tiny"))
    folders = [r.folder for r in ladder.rungs()]
    assert len(set(folders)) == 4, folders
    assert folders[1] == "hf-cfg_gpt.json" and folders[3] == "hf-gpt2-tiny"  # safe short names stay as they are
    assert all(f.startswith("hf-cfg_gpt.json-") and len(f) == len("hf-cfg_gpt.json-") + 8 for f in folders[::2])


def test_long_values_get_bounded_distinct_folders():
    a, b = "/data/" + "x" * 300 + "/a.json", "/data/" + "x" * 300 + "/b.json"
    fa, fb = spec.folder_name(f"hf-{a}"), spec.folder_name(f"hf-{b}")
    assert fa != fb and len(fa) == len(fb) == spec.MAX_FOLDER
