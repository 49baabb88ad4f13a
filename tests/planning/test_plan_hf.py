"""``embtie plan`` for a Hugging Face causal LM (``model.name=hf``): its attention term comes from the
transformers config (one attention module per hidden layer, computed at heads x head dim), so FLOPs per token
are 6 N + 12 L d_attn T as for embtie's GPT. The configs are written here (no download)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embtie import cli, tasks
from embtie.config import load_config
from embtie.planning import estimate, model_shape

D, LAYERS, HEADS, HEAD_DIM, KV_HEADS, FF = 48, 3, 4, 16, 2, 96
"""a Llama whose attention is wider than its residual stream (4 x 16 = 64 > 48), as in Qwen3 and Gemma."""


def _llama(folder: Path) -> Path:
    path = folder / "llama.json"
    config = {"model_type": "llama", "hidden_size": D, "intermediate_size": FF, "num_hidden_layers": LAYERS,
              "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
              "max_position_embeddings": 128}  # fmt: skip
    path.write_text(json.dumps(config))
    return path


def test_an_hf_model_counts_its_attention_as_the_formula(tmp_path):
    """N by hand for a tied Llama: the shared V x d matrix, per layer q, k, v, o (GQA: k and v have 2 heads),
    the gated MLP (3 d x ff) and two RMSNorms, and the final norm; no lookup-only table. T = bptt = 64."""
    cfg = load_config("ptb-hf-gpt2-tiny", [f"model.hf={_llama(tmp_path)}", "train.max_steps=10"])
    task = tasks.get(cfg.task)(cfg)
    shape = model_shape.measure(cfg, task)
    run = estimate.budget(cfg, task)
    v, attn, kv = task.output_vocab_size(), HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    layer = D * attn + 2 * D * kv + attn * D + 3 * D * FF + 2 * D
    n = v * D + LAYERS * layer + D
    assert run.context == 64
    assert estimate.flops_per_token(shape, run.context) == 6 * n + 12 * LAYERS * attn * 64
    assert (shape.matmul_params, shape.dim, shape.attention_layers, shape.attention_dim) == (n, D, LAYERS, attn)


def test_plan_prints_an_hf_gpt2s_attention_term(capsys):
    """The packaged gpt2-tiny (4 layers of width 128, 4 heads): 12 x 4 x 128 x 64 attention FLOPs per token,
    in the table's figure, the JSON and the formula line."""
    argv = ["plan", "ptb-hf-gpt2-tiny", "train.max_steps=10", "--hardware", "cpu:2"]
    assert cli.main([*argv, "--json"]) == 0
    s = json.loads(capsys.readouterr().out)["strategies"][0]
    assert s["flops_per_token"] == pytest.approx(6 * s["params"]["matmul"] + 12 * 4 * 128 * 64, rel=1e-12)
    assert (s["params"]["attention_layers"], s["params"]["attention_dim"]) == (4, 128)
    assert cli.main(argv) == 0
    assert f"= 6 x {s['params']['matmul']:,} + 12 x 4 x 128 x 64.0;" in capsys.readouterr().out
