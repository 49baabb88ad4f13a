"""Where a Hugging Face causal LM comes from (``model.hf``): a packaged config name (``gpt2-tiny``), a
transformers config JSON, or a local ``save_pretrained`` folder (a pretrained checkpoint with its tokenizer).

A config (a name or a JSON file) gives a freshly initialised model of the vocabulary embtie's task builds;
a folder gives the checkpoint's weights, its token rows rearranged to that vocabulary
(``embtie.hf.vocab_transfer``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from torch import nn

from embtie.errors import ConfigError, DataError
from embtie.hf._require import config_errors, first_line, require_transformers
from embtie.hf.config_numbers import check_numbers
from embtie.hf.families import FAMILIES
from embtie.schema import did_you_mean

CONFIG_FILE = "config.json"


def packaged_model_configs() -> dict[str, Path]:
    """{name: path} of the transformers configs shipped with embtie (``embtie/configs/hf/NAME.json``)."""
    folder = Path(str(resources.files("embtie") / "configs" / "hf"))
    return {p.stem: p for p in sorted(folder.glob("*.json"))} if folder.is_dir() else {}


def resolve_model_config(spec: str | Path) -> Path:
    """The file of a packaged config name (``gpt2-tiny``), of a transformers config JSON, or the config.json
    of a ``save_pretrained`` folder."""
    packaged = packaged_model_configs()
    names = ", ".join(packaged)
    p = Path(spec).expanduser()
    if p.is_dir():
        if not (p / CONFIG_FILE).is_file():
            raise DataError(f"{p} has no {CONFIG_FILE}; give a folder written by save_pretrained")
        return p / CONFIG_FILE
    if p.is_file():
        return p
    if p.suffix == ".json" or len(p.parts) > 1:
        hint = f"; the packaged one is the name {p.stem!r}" if p.stem in packaged else ""
        raise DataError(
            f"model config {p} does not exist{hint}; give a transformers config JSON, a save_pretrained folder "
            f"or a packaged name ({names})"
        )
    if str(spec) not in packaged:
        raise ConfigError(
            f"unknown model config {str(spec)!r}{did_you_mean(str(spec), packaged)}; choose one of: {names} "
            "or the path of a transformers config JSON or save_pretrained folder"
        )
    return packaged[str(spec)]


def read_model_config(spec: str | Path) -> dict[str, Any]:
    """The JSON dict of a transformers config, named (``gpt2-tiny``), by file or by folder (must name its
    ``model_type``)."""
    p = resolve_model_config(spec)
    try:
        raw = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"model config {p} is not valid JSON: {e}") from None
    if not isinstance(raw, dict) or "model_type" not in raw:
        raise ConfigError(f'model config {p} must be a JSON object with a "model_type" (e.g. "gpt2", "llama")')
    if "embtie" in raw:
        raise ConfigError(
            f"{p.parent} was saved after embtie.hf.apply; write stock weights with embtie.hf.export and give that "
            "folder"
        )
    check_numbers(raw, p)
    return raw


def model_config(raw: dict[str, Any], vocab_size: int, eos_id: int | None = None):
    """The transformers config of ``raw`` for ``vocab_size`` tokens; bos/eos default to ``eos_id``. A
    ConfigError for a bad config or an encoder-decoder."""
    transformers = require_transformers()
    drop = ("model_type", "architectures", "transformers_version", "dtype", "torch_dtype")
    kwargs = {k: v for k, v in raw.items() if k not in drop}
    kwargs["vocab_size"] = vocab_size
    for key in ("bos_token_id", "eos_token_id"):
        kwargs.setdefault(key, eos_id)
    try:
        config = transformers.AutoConfig.for_model(raw["model_type"], **kwargs)
    except config_errors() as e:
        raise ConfigError(f"bad model config for {raw['model_type']!r}: {first_line(e)}") from None
    if config.is_encoder_decoder:
        raise ConfigError(
            f"the lm task trains causal language models; {raw['model_type']} is an encoder-decoder: train it with "
            "model.name=hf-seq2seq on the translation task (preset multi30k-hf-marian-tiny)"
        )
    if raw["model_type"] not in FAMILIES:
        raise ConfigError(
            f"model_type {raw['model_type']!r} is not one embtie.hf knows; choose one of: {', '.join(FAMILIES)}"
        )
    return config


def build_model(config) -> nn.Module:
    """A freshly initialised causal-LM model of ``config`` (the seed is the caller's)."""
    transformers = require_transformers()
    try:
        return transformers.AutoModelForCausalLM.from_config(config)
    except config_errors() as e:  # no causal-LM class, or a value the model's layers refuse (heads, activation)
        raise ConfigError(
            f"transformers cannot build a causal LM from this {config.model_type!r} model config ({first_line(e)}): "
            "fix that value in the config"
        ) from None


@dataclass(frozen=True)
class Shape:
    """What embtie's config needs of an HF model before building it."""

    dim: int
    """the width of its token tables (hidden_size)."""
    max_len: int | None
    """its longest sequence (max_position_embeddings), None when it has no limit."""
    pretrained: bool
    """a save_pretrained folder (weights to start from) rather than a config."""
    attention_layers: int = 0
    """its dot-product attention modules: one per hidden layer (num_hidden_layers)."""
    attention_dim: int = 0
    """the width QK^T and AV are computed at: heads x head dim (num_attention_heads x head_dim, head_dim
    hidden_size / heads where the config gives none); hidden_size for most families, not for Qwen3 or Gemma."""
    attention_windows: tuple[int | None, ...] = ()
    """per attention layer, the most keys a query sees (sliding-window attention: Mistral's every layer,
    Gemma 2/3's and windowed Qwen2's "sliding_attention" layers) or None (full causal); () when all are full."""


def shape_of(spec: str) -> Shape:
    """The width, context length and kind of the model ``spec`` names (cached while its config file keeps
    its size and modification time: configs read it often, and an edited file is read again)."""
    st = resolve_model_config(spec).stat()
    return _shape_of(spec, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=32)
def _shape_of(spec: str, size: int, mtime_ns: int) -> Shape:
    """``shape_of`` for the config file's (``size``, ``mtime_ns``): the cache key, never read here."""
    raw = read_model_config(spec)
    config = model_config(raw, int(raw.get("vocab_size", 8)))
    text = config.get_text_config()
    max_len = getattr(text, "max_position_embeddings", None)  # foreign: a transformers config
    heads = int(text.num_attention_heads)
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads  # foreign: a transformers config
    return Shape(
        int(text.hidden_size),
        None if max_len is None else int(max_len),
        Path(spec).expanduser().is_dir(),
        attention_layers=int(text.num_hidden_layers),
        attention_dim=heads * int(head_dim),
        attention_windows=_windows(text),
    )


def _windows(text: Any) -> tuple[int | None, ...]:
    """The sliding windows of a transformers text config, per layer (``Shape.attention_windows``): its
    ``layer_types`` name the windowed layers ("sliding_attention") where it has them; without them a set
    ``sliding_window`` (Mistral) windows every layer."""
    window = getattr(text, "sliding_window", None)  # foreign: a transformers config
    if not isinstance(window, int) or window <= 0:
        return ()
    types = getattr(text, "layer_types", None)  # foreign: a transformers config
    if types is None:
        return (window,) * int(text.num_hidden_layers)
    windows = tuple(window if t == "sliding_attention" else None for t in types)
    return windows if any(w is not None for w in windows) else ()
