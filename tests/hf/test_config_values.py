"""A foreign model config's other values, and a damaged pretrained folder, are one line before anything trains
(issue 54, class 6): ``"tie_word_embeddings": "yes"`` reached huggingface_hub's strict dataclass check, an unknown
activation was a KeyError inside the model's layers, and a truncated model.safetensors ended in "please report
it" from ``from_pretrained``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embtie import sharing
from embtie.cli import main
from embtie.errors import ConfigError, DataError

transformers = pytest.importorskip("transformers")

GPT2 = {"model_type": "gpt2", "n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 64}
TINY = ["train.threads=1", "data.train_tokens=4000", "data.valid_tokens=512", "data.bptt=16", "data.batch_size=4",
        "train.eval_batches=1", "train.max_steps=2"]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"tie_word_embeddings": "yes"}, "'tie_word_embeddings': TypeError: Field 'tie_word_embeddings' expected"),
        ({"activation_function": "nope"}, "(KeyError: 'nope'): fix that value in the config"),
        ({"n_head": 3}, "divisible"),
        ({"n_layer": "2"}, "n_layer"),
    ],
)
def test_a_bad_value_in_a_model_config_is_one_line(change, said, tmp_path):
    from embtie.hf.sources import build_model, model_config

    with pytest.raises(ConfigError) as e:
        build_model(model_config({**GPT2, **change}, 32))
    assert said in str(e.value) and "\n" not in str(e.value), str(e.value)


def _folder(tmp: Path) -> Path:
    import torch

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, n_positions=64, vocab_size=40)
    out = tmp / "pre"
    transformers.GPT2LMHeadModel(cfg).save_pretrained(out)
    (out / "vocab.json").write_text(json.dumps({f"w{i}": i for i in range(40)}), encoding="utf-8")
    return out


@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_a_damaged_pretrained_weights_file_is_one_line_naming_it(damage, tmp_path):
    from embtie.hf.lm_body import build_body

    folder = _folder(tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:300] if damage == "truncated" else b"")
    table = sharing.build("tied", vocab_size=40, dim=16)
    with pytest.raises(DataError) as e:
        build_body(str(folder), table, [f"w{i}" for i in range(40)], {})
    assert str(e.value).startswith(f"{weights} is damaged or not a safetensors file (SafetensorError: ")
    assert "\n" not in str(e.value)


def test_train_with_a_tie_flag_of_yes_exits_2_in_one_line_and_leaves_no_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMBTIE_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "yes.json"
    config.write_text(json.dumps({**GPT2, "tie_word_embeddings": "yes"}), encoding="utf-8")
    out = tmp_path / "run"
    code = main(["train", "ptb-hf-gpt2-tiny", "--out", str(out), f"model.hf={config}", *TINY])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "please report" not in err, err
    assert "tie_word_embeddings" in err and not (out / "checkpoints").exists()
