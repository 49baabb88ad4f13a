"""EMBTIE_CHEAP=1 (embtie.cheap): the one override the documentation tests run every command with."""

from __future__ import annotations

import pytest

from embtie import cheap, cli
from embtie.commands.compare import request_of
from embtie.config import load_config


def test_without_the_variable_nothing_changes(monkeypatch):
    monkeypatch.delenv(cheap.CHEAP_ENV, raising=False)
    cfg = load_config("ptb-gpt-tiny", ["train.max_steps=300"])
    assert cfg.train.max_steps == 300 and cfg.data.train_tokens is None
    monkeypatch.setenv(cheap.CHEAP_ENV, "0")
    assert load_config("ptb-gpt-tiny").train.max_steps == 600


def test_every_run_config_becomes_a_smoke_test_whatever_the_overrides(monkeypatch):
    monkeypatch.setenv(cheap.CHEAP_ENV, "1")
    cfg = load_config("ptb-gpt-tiny", ["train.max_steps=300", "sharing.name=l2norm"])
    assert cfg.sharing.name == "l2norm"  # the user's own choices are kept
    assert (cfg.train.max_steps, cfg.train.warmup_steps, cfg.train.checkpoint_every) == (3, 0, 1)
    assert (cfg.data.batch_size, cfg.data.train_tokens, cfg.data.valid_tokens) == (2, 2048, 512)
    mt = load_config("multi30k-transformer-small")
    assert (mt.data.train_pairs, mt.data.valid_pairs, mt.train.max_steps) == (64, 4, 3)


@pytest.mark.parametrize(("argv", "seeds"), [(["--seeds", "5"], 1), (["--seeds", "1"], 1), ([], 1)])
def test_compare_trains_one_seed(monkeypatch, argv, seeds):
    monkeypatch.setenv(cheap.CHEAP_ENV, "1")
    args = cli.build_parser().parse_args(["compare", "ptb-gpt-tiny", *argv])
    assert request_of(args).to_spec().seeds == seeds


def test_until_decided_stops_at_two_seeds(monkeypatch):
    monkeypatch.setenv(cheap.CHEAP_ENV, "1")
    args = cli.build_parser().parse_args(
        ["compare", "ptb-gpt-tiny", "--until-decided", "--seeds", "4", "--max-seeds", "10"]
    )
    design = request_of(args).to_spec().design
    assert design is not None and (design.first, design.max_seeds) == (2, 2)


def test_the_variable_is_documented_in_the_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "EMBTIE_CHEAP=1" in capsys.readouterr().out
