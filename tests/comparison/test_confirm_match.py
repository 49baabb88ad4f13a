"""`embtie confirm` re-runs a comparison whose arms were matched (--match params/flops): the match is part of
the design it re-runs and of what makes two folders two designs; a ladder is still refused in one line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from embtie.comparison.confirmation import read_original
from embtie.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _old_folder(tmp_path: Path, command: str) -> Path:
    """A folder older than design files: its results.json holds the command that made it."""
    folder = tmp_path / "old"
    folder.mkdir()
    rows = [{"strategy": s, "seed": k} for s in ("tied", "untied") for k in range(3)]
    (folder / "results.json").write_text(json.dumps({"command": command, "preset": "ptb-gpt-tiny", "rows": rows,
                                                     "overrides": ["train.max_steps=9"]}))  # fmt: skip
    return folder


def test_the_committed_matched_folder_is_re_run_with_its_match():
    original = read_original(REPO / "results" / "ladder-matched-m")
    assert original.match == "params:0.05" and original.next_seed == 3
    args = original.compare_args(Path("fresh"), 3300, (3,), jobs=2)
    at = args.index("--match")
    assert args[at : at + 4] == ["--match", "params", "--match-tolerance", "0.05"]
    assert args[args.index("--first-seed") + 1] == "3300" and "model.n_layers=1" in args


def test_an_old_command_s_tolerance_and_mode_are_read(tmp_path):
    folder = _old_folder(tmp_path, "embtie compare ptb-gpt-tiny --strategies tied,untied --seeds 3 "
                                   "--match=flops --match-tolerance 0.1 --out runs/x train.max_steps=9")  # fmt: skip
    original = read_original(folder)
    assert original.match == "flops:0.1"
    assert original.compare_args(Path("f"), 3, (3,), 1)[-5:-1] == ["--match", "flops", "--match-tolerance", "0.1"]
    unmatched = replace(original, match=None)
    assert "--match" not in unmatched.compare_args(Path("f"), 3, (3,), 1)
    assert original.differences(unmatched) == "match: flops:0.1 -> None"


def test_a_ladder_is_still_refused_in_one_line(tmp_path):
    folder = _old_folder(tmp_path, "embtie compare ptb-gpt-tiny --strategies tied,untied --seeds 3 "
                                   "--ladder model.dim=32,64 --out runs/x")  # fmt: skip
    with pytest.raises(ConfigError, match=r"uses --ladder: a ladder is not re-run .* with --first-seed by hand"):
        read_original(folder)
