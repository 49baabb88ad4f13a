"""``embtie compare --ladder`` on the command line: malformed ladders and options that do nothing are refused
with one line (exit 2, no traceback, nothing written); a dry run prints every rung's budget and plan."""

from __future__ import annotations

import pytest

from embtie.cli import main

LADDER = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2"]


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse
        return e.code if isinstance(e.code, int) else 1


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        ([*LADDER, "--ladder", "model.n_layers"], "is not KEY=V1,V2"),
        ([*LADDER, "--ladder", "model.n_layers=2"], "at least 2 values"),
        ([*LADDER, "--ladder", "size=xs,xs"], "twice"),
        ([*LADDER, "--ladder", "size=xs,tiny"], "is not a size"),
        ([*LADDER, "--ladder", "model.n_layer=1,2"], "unknown key"),
        ([*LADDER, "--ladder", "model.n_layers=1,two"], "rung two"),
        ([*LADDER, "--ladder", "size=xs,s", "model.dim=64"], "size=xs,s steps for every arm; leave it out"),
        ([*LADDER, "--ladder", "size=xs,s", "train.max_steps=50"], "--tokens-per-param"),
        ([*LADDER, "--ladder", "size=xs,s", "--extrapolate", "s"], "a rung the ladder trains"),
        ([*LADDER, "--ladder", "size=xs,s", "--tokens-per-param", "0"], "--tokens-per-param"),
        ([*LADDER, "--tokens-per-param", "5"], "is an option of --ladder"),
        ([*LADDER, "--extrapolate", "6xl"], "is an option of --ladder"),
        ([*LADDER, "--match-tolerance", "0.1"], "is an option of --match"),
        ([*LADDER, "--match", "params", "--match-tolerance", "0.0001"], "beyond the tolerance"),
        (["compare", "--ladder", "size=xs,s"], "needs a preset"),
        (["compare", "ptb-lstm-small", "--ladder", "size=xs,s"], "sets the shape of a gpt model"),
    ],
)
def test_bad_ladders_are_refused_with_one_line(argv, expect, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc = _run([*argv, "--out", "runs/lad"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1 and expect in err[0] and "Traceback" not in err[0], err
    assert not (tmp_path / "runs").exists()


def test_an_output_folder_that_is_a_file_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    assert _run([*LADDER, "--ladder", "size=xs,s", "--out", "afile"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "afile is a file, not a folder" in err[0]


def test_a_dry_run_prints_each_rung_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc = _run([*LADDER, "--ladder", "size=xs,s", "--match", "params", "--dry-run", "--out", "runs/lad"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ladder rung 1/2 xs: 12,384 body parameters, 242 steps" in out
    assert "ladder rung 2/2 s: 27,792 body parameters, 543 steps" in out
    assert "runs/lad/rungs/size-s/runs/untied/seed1" in out
    assert not (tmp_path / "runs").exists()
