"""`embtie hf-compare` end to end on a very small GPT-2 config and a slice of real PTB."""

import json

import pytest
import torch

pytest.importorskip("transformers")

from embtie import cli
from embtie.commands.hf_compare import parse_options
from embtie.errors import ConfigError


def test_hf_compare_is_a_shortcut_onto_compare(tmp_path, capsys):
    """The command line becomes `embtie compare ptb-hf-gpt2-tiny model.hf=...`: paired seeds, verdicts, the
    report; an option makes a labelled variant; --save-models writes each strategy's seed-0 model, which
    embtie.hf.load reads back with the trained weights."""
    import embtie.hf
    from embtie.rundir.loading import load_run

    cfg = tmp_path / "gpt2-micro.json"
    cfg.write_text(json.dumps({"model_type": "gpt2", "n_embd": 16, "n_layer": 1, "n_head": 2, "n_positions": 32}))
    out = tmp_path / "out"
    argv = ["hf-compare", str(cfg), "--strategies", "tied,fixed", "--steps", "3", "--out", str(out), "--seeds", "2",
            "--block", "16", "--batch-size", "4", "--train-tokens", "2000", "--valid-tokens", "300",
            "--option", "fixed.logit_scale=learned", "--device", "cpu", "--save-models"]  # fmt: skip
    assert cli.main(argv) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"same as: embtie compare ptb-hf-gpt2-tiny model.hf={cfg} data.dataset=ptb ")
    assert "--strategies tied,fixed-logit_scale.learned=fixed:logit_scale=learned --seeds 2" in said
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert sorted((r["strategy"], r["seed"], r["steps"]) for r in rows) == [
        ("fixed-logit_scale.learned", 0, 3), ("fixed-logit_scale.learned", 1, 3), ("tied", 0, 3), ("tied", 1, 3)]
    assert "undecided" in (out / "report.md").read_text() or "better" in (out / "report.md").read_text()
    saved = embtie.hf.load(out / "fixed-logit_scale.learned" / "model")
    run = load_run(out / "runs" / "fixed-logit_scale.learned" / "seed0")
    assert embtie.hf.sharing_of(saved).name == "fixed"
    torch.testing.assert_close(embtie.hf.sharing_of(saved).weight, run.model.sharing.weight)


def test_option_parsing():
    assert parse_options(["fixed.logit_scale=learned", "fixed.target_dim=64", "tied.bias=true"]) == {
        "fixed": {"logit_scale": "learned", "target_dim": 64},
        "tied": {"bias": True},
    }
    with pytest.raises(ConfigError, match=r"STRATEGY\.KEY=VALUE"):
        parse_options(["logit_scale=learned"])
