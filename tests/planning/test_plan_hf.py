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


def _windowed(folder: Path, model_type: str, window: int, **extra: object) -> Path:
    path = folder / f"{model_type}.json"
    config = {"model_type": model_type, "hidden_size": D, "intermediate_size": FF, "num_hidden_layers": 4,
              "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
              "max_position_embeddings": 128, "sliding_window": window, **extra}  # fmt: skip
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(
    "model_type, extra, windowed",
    [
        ("mistral", {}, 4),  # Mistral windows every layer
        ("gemma2", {}, 2),  # Gemma 2 alternates sliding and full layers (layer_types)
        ("qwen2", {"use_sliding_window": True, "max_window_layers": 1}, 3),  # layers from the 2nd are windowed
        ("qwen2", {"use_sliding_window": False}, 0),  # a window set but not used: every layer full
    ],
)
def test_a_sliding_window_counts_min_t_w_keys_in_the_windowed_layers(tmp_path, capsys, model_type, extra, windowed):
    """T = bptt = 64 and W = 16: a windowed layer attends 16 keys a query, a full one 64, so the attention
    term is 12 d_attn (k 16 + (4 - k) 64) for k windowed layers, in the estimate and the formula line."""
    hf = _windowed(tmp_path, model_type, 16, **extra)
    over = [
        f"model.hf={hf}",
        "train.max_steps=10",
        *(["sharing.options.embed_scale=sqrt_d"] * (model_type == "gemma2")),
    ]
    cfg = load_config("ptb-hf-gpt2-tiny", over)
    task = tasks.get(cfg.task)(cfg)
    shape = model_shape.measure(cfg, task)
    attended = windowed * 16 + (4 - windowed) * 64
    assert shape.attended(64) == attended and shape.attention_layers == 4
    attn = 12 * HEADS * HEAD_DIM * attended
    assert estimate.flops_per_token(shape, 64) == 6 * shape.matmul_params + attn
    assert estimate.flops_per_token(shape, 8) == 6 * shape.matmul_params + 12 * HEADS * HEAD_DIM * 4 * 8  # T < W
    assert cli.main(["plan", "ptb-hf-gpt2-tiny", *over, "--hardware", "cpu:2"]) == 0
    out = capsys.readouterr().out
    if windowed:
        assert (
            f"+ 12 x {HEADS * HEAD_DIM} x {attended:,.1f} ({windowed} of 4 layers attend through a sliding window "
            "W = 16" in out
        )
    else:
        assert f"+ 12 x 4 x {HEADS * HEAD_DIM} x 64.0;" in out
