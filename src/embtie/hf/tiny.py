"""Tiny random transformers models of every supported family, for tests, examples and quick comparisons
(no weights are downloaded: each is built from a small configuration)."""

from __future__ import annotations

from typing import Any

from torch import nn

from embtie.errors import ConfigError
from embtie.hf._require import require_transformers

_DECODER: dict[str, Any] = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "max_position_embeddings": 64,
}
"""A decoder-only body of width 32 (2 layers, grouped-query attention) shared by the llama-like families."""

# model_type -> (config class, model class, config keyword arguments for width 32)
_TINY: dict[str, tuple[str, str, dict[str, Any]]] = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {"n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 64}),
    "llama": (
        "LlamaConfig",
        "LlamaForCausalLM",
        {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 64,
        },
    ),
    "qwen2": (
        "Qwen2Config",
        "Qwen2ForCausalLM",
        {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 64,
        },
    ),
    "mistral": (
        "MistralConfig",
        "MistralForCausalLM",
        {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 64,
        },
    ),
    "qwen3": (
        "Qwen3Config",
        "Qwen3ForCausalLM",
        {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "max_position_embeddings": 64,
        },
    ),
    "gpt_neox": (
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "max_position_embeddings": 64,
        },
    ),
    "marian": (
        "MarianConfig",
        "MarianMTModel",
        {
            "d_model": 32,
            "encoder_layers": 1,
            "decoder_layers": 1,
            "encoder_attention_heads": 2,
            "decoder_attention_heads": 2,
            "encoder_ffn_dim": 64,
            "decoder_ffn_dim": 64,
            "max_position_embeddings": 64,
            "scale_embedding": True,
        },
    ),
    "bart": (
        "BartConfig",
        "BartForConditionalGeneration",
        {
            "d_model": 32,
            "encoder_layers": 1,
            "decoder_layers": 1,
            "encoder_attention_heads": 2,
            "decoder_attention_heads": 2,
            "encoder_ffn_dim": 64,
            "decoder_ffn_dim": 64,
            "max_position_embeddings": 64,
            "scale_embedding": True,
        },
    ),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", _DECODER),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {**_DECODER, "sliding_window": 16}),
    "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM", {**_DECODER, "sliding_window": 16}),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", _DECODER),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", _DECODER),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", _DECODER),
    "t5": (
        "T5Config",
        "T5ForConditionalGeneration",
        {"d_model": 32, "d_ff": 64, "d_kv": 16, "num_layers": 1, "num_heads": 2, "relative_attention_num_buckets": 8},
    ),
}

TINY_MODEL_TYPES = tuple(_TINY)

# special token ids used by every tiny model: bos 0, eos 1, pad 2 (Marian/BART start decoding with pad / eos)
SPECIAL = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}


def tiny_config(model_type: str, vocab_size: int = 64, **overrides: Any):
    """A small random-init configuration of ``model_type`` (width 32, 1-2 layers)."""
    transformers = require_transformers()
    if model_type not in _TINY:
        raise ConfigError(f"no tiny preset for model type {model_type!r}; choose one of: {', '.join(_TINY)}")
    config_cls, _, kwargs = _TINY[model_type]
    kw: dict[str, Any] = {**kwargs, **SPECIAL, "vocab_size": vocab_size}
    if model_type in ("marian", "bart"):
        kw["decoder_start_token_id"] = 2 if model_type == "marian" else 1
        kw["forced_eos_token_id"] = None
    kw.update(overrides)
    return getattr(transformers, config_cls)(**kw)


def tiny_model(model_type: str, vocab_size: int = 64, **overrides: Any) -> nn.Module:
    """A small random-init model with an LM head (``GPT2LMHeadModel``, ``MarianMTModel``, ...), in eval mode."""
    transformers = require_transformers()
    config = tiny_config(model_type, vocab_size, **overrides)
    return getattr(transformers, _TINY[model_type][1])(config).eval()
