"""``embtie plan`` for a Hugging Face encoder-decoder (``model.name=hf-seq2seq``): its attention term comes from
the transformers config (self-attention in each encoder layer, self- and cross-attention in each decoder layer,
at d_model = heads x head dim), so FLOPs per target token are 6 N + 12 (L_enc + 2 L_dec) d T, the count embtie's
own Transformer gets from its modules. The config is written here (no download)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from embtie import cli, tasks
from embtie.config import load_config
from embtie.planning import estimate, model_shape

D, ENC, DEC, FF = 48, 1, 2, 96
SMALL = ["data.vocab_size=200", "data.train_pairs=600", "train.max_steps=10"]


def _marian(folder: Path) -> Path:
    path = folder / "marian.json"
    config = {"model_type": "marian", "d_model": D, "encoder_layers": ENC, "decoder_layers": DEC,
              "encoder_attention_heads": 4, "decoder_attention_heads": 6, "encoder_ffn_dim": FF,
              "decoder_ffn_dim": FF, "max_position_embeddings": 128, "scale_embedding": True}  # fmt: skip
    path.write_text(json.dumps(config))
    return path


def test_an_hf_encoder_decoder_counts_its_attention_as_the_formula(tmp_path):
    """N by hand for a tied Marian: the shared V x d matrix (encoder, decoder and head), per encoder layer q, k,
    v, o with biases, two LayerNorms and the FFN, per decoder layer two attentions, three LayerNorms and the FFN;
    the sinusoidal positions are neither learned nor multiplied. T = the mean target length of the run."""
    cfg = load_config("multi30k-hf-marian-tiny", [f"model.hf={_marian(tmp_path)}", *SMALL])
    task = tasks.get(cfg.task)(cfg)
    shape = model_shape.measure(cfg, task)
    run = estimate.budget(cfg, task)
    v, attention, ffn = task.output_vocab_size(), 4 * (D * D + D), D * FF + FF + FF * D + D
    n = v * D + ENC * (attention + 2 * 2 * D + ffn) + DEC * (2 * attention + 3 * 2 * D + ffn)
    layers = ENC + 2 * DEC
    text = task.training_text()
    assert run.context == pytest.approx(text.tokens / text.sequences)
    assert (shape.matmul_params, shape.dim, shape.attention_layers, shape.attention_dim) == (n, D, layers, D)
    assert estimate.flops_per_token(shape, run.context) == pytest.approx(6 * n + 12 * layers * D * run.context)


def test_plan_prints_the_packaged_marians_attention_term(capsys):
    """marian-tiny (width 128, 2 + 2 layers): 12 x 6 x 128 x T attention FLOPs per token in the JSON and the
    formula line."""
    argv = ["plan", "multi30k-hf-marian-tiny", *SMALL, "--hardware", "cpu:2"]
    assert cli.main([*argv, "--json"]) == 0
    s = json.loads(capsys.readouterr().out)["strategies"][0]
    assert (s["params"]["attention_layers"], s["params"]["attention_dim"]) == (6, 128)
    attention = 12 * 6 * 128 * s["context"]
    assert s["flops_per_token"] == pytest.approx(6 * s["params"]["matmul"] + attention, rel=1e-12)
    assert cli.main(argv) == 0
    assert f"= 6 x {s['params']['matmul']:,} + 12 x 6 x 128 x " in capsys.readouterr().out
