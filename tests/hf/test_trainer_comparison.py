"""`embtie hf-compare` end to end on a very small GPT-2 config and a slice of real PTB."""

import json

import pytest

pytest.importorskip("transformers")

from embtie import cli
from embtie.commands.hf_compare import parse_options
from embtie.errors import ConfigError


def test_hf_compare_writes_a_table_and_json(tmp_path, capsys):
    cfg = tmp_path / "gpt2-micro.json"
    cfg.write_text(json.dumps({"model_type": "gpt2", "n_embd": 16, "n_layer": 1, "n_head": 2, "n_positions": 32}))
    out = tmp_path / "out"
    argv = ["hf-compare", str(cfg), "--strategies", "tied,fixed", "--steps", "3", "--out", str(out)]
    argv += ["--block", "16", "--batch-size", "4", "--train-tokens", "2000", "--valid-tokens", "300"]
    argv += ["--option", "fixed.logit_scale=learned", "--device", "cpu"]
    assert cli.main(argv) == 0
    report = json.loads((out / "results.json").read_text())
    assert report["vocab_size"] == 10000 and report["valid_tokens"] == 288  # 18 blocks x 16 predictions
    rows = {r["strategy"]: r for r in report["results"]}
    assert list(rows) == ["tied", "fixed"]
    assert rows["fixed"]["options"]["logit_scale"] == "learned"
    # the fixed strategy learns E and a scale, not the 10000 x 16 target matrix
    assert rows["fixed"]["sharing_params"] == {"learned": 10000 * 16 + 1, "fixed": 10000 * 16}
    for r in rows.values():
        assert r["steps"] == 3 and 1 < r["valid_ppl"] < 1e6
    table = (out / "results.md").read_text()
    assert table.startswith("| strategy | valid ppl") and "| fixed |" in table
    assert "| tied |" in capsys.readouterr().out


def test_option_parsing():
    assert parse_options(["fixed.logit_scale=learned", "fixed.target_dim=64", "tied.bias=true"]) == {
        "fixed": {"logit_scale": "learned", "target_dim": 64},
        "tied": {"bias": True},
    }
    with pytest.raises(ConfigError, match=r"STRATEGY\.KEY=VALUE"):
        parse_options(["logit_scale=learned"])
