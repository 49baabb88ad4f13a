"""load(): rebuild a patched model saved with save_pretrained, bit-exactly.

``transformers``' own ``from_pretrained`` does not know about the sharing object (its tensors are saved
under ``embtie_sharing.*`` and the model's embedding keys are absent); a patched model's save_pretrained
guards the folder so that from_pretrained refuses it in one line naming this function
(``embtie.hf.saved_config``). A patched checkpoint is loaded with ``embtie.hf.load``: the model class is
built from the saved config, the recorded strategy is applied with the recorded options (no weight
copying), and the saved tensors, fixed targets included, are loaded strictly on top. Nothing is re-drawn.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn

from embtie.errors import DataError
from embtie.hf import saved_config
from embtie.hf._require import config_errors, first_line, require_transformers
from embtie.hf.patch import apply

WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"


def _weight_files(path: Path) -> list[Path]:
    if (path / WEIGHTS).is_file():
        return [path / WEIGHTS]
    index = path / WEIGHTS_INDEX
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise DataError(f"{index} is damaged ({first_line(e)}); save the model again") from None
        return [path / s for s in shards]
    raise DataError(f"no {WEIGHTS} or {WEIGHTS_INDEX} in {path}; save the model with model.save_pretrained(path)")


def _logits_with_labels(record: dict) -> bool | str:
    """The recorded ``logits_with_labels``; a format-1 record's False was the default then, not a choice,
    and reads as today's default "eval" (logits for the Trainer's compute_metrics in eval mode)."""
    setting = record.get("logits_with_labels", False)
    return "eval" if setting is False and record.get("format", 1) < 2 else setting


def load(path: str | Path, *, device: str | torch.device | None = None, dtype: torch.dtype | None = None) -> nn.Module:
    """Load a model saved by ``save_pretrained`` after ``embtie.hf.apply``; returns it in eval mode.

    dtype: defaults to the dtype the sharing object's weights were saved in.
    """
    transformers = require_transformers()
    path = Path(path)
    if not (path / "config.json").is_file():
        raise DataError(f"no config.json in {path}; give the directory written by model.save_pretrained")
    try:
        config = transformers.AutoConfig.from_pretrained(str(path))
    except config_errors(OSError) as e:  # unreadable or not a transformers config
        raise DataError(f"{path / 'config.json'} cannot be read as a transformers config: {first_line(e)}") from None
    record = getattr(config, "embtie", None)  # foreign: a transformers config
    if not isinstance(record, dict) or "strategy" not in record:
        raise DataError(f"{path} was not saved from a model patched by embtie.hf.apply; load it with from_pretrained")
    base = getattr(transformers, record["base_class"], None)
    if base is None:
        raise DataError(f"transformers {transformers.__version__} has no model class {record['base_class']!r}")
    state: dict[str, torch.Tensor] = {}
    for f in _weight_files(path):
        try:
            state.update(load_file(str(f)))
        except Exception as e:  # safetensors' own error types: truncated, not safetensors, unreadable
            raise DataError(
                f"{f} is damaged or not a safetensors file ({first_line(e)}); save the model again"
            ) from None
    if dtype is None:
        saved = state.get("embtie_sharing.weight")
        dtype = saved.dtype if saved is not None else torch.float32
    saved_config.unguard(config)
    model = base(config)
    record["logits_with_labels"] = _logits_with_labels(record)
    options = record["options"]
    apply(model, record["strategy"], copy_weights=False, logits_with_labels=record["logits_with_labels"], **options)
    model.config.embtie = record  # keep the conventions recorded when the strategy was first applied
    model.to(dtype=dtype)
    result = model.load_state_dict(state, strict=False)
    allowed_missing = set(getattr(base, "_keys_to_ignore_on_save", None) or [])  # foreign: a transformers model class
    missing = [k for k in result.missing_keys if k not in allowed_missing]
    if missing or result.unexpected_keys:
        raise DataError(
            f"{path} does not match {record['base_class']} with strategy {record['strategy']!r}: "
            f"missing {missing[:5]}, unexpected {result.unexpected_keys[:5]}"
        )
    if (path / "generation_config.json").is_file():
        model.generation_config = transformers.GenerationConfig.from_pretrained(str(path))
    if device is not None:
        model.to(device)
    model.eval()
    return model
