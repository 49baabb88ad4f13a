"""load(): rebuild a patched model saved with save_pretrained, bit-exactly.

``transformers``' own ``from_pretrained`` does not know about the sharing object (its tensors are saved
under ``embtie_sharing.*`` and the model's embedding keys are absent), so a patched checkpoint is loaded
with ``embtie.hf.load``: the model class is built from the saved config, the recorded strategy is applied
with the recorded options (no weight copying), and the saved tensors, fixed targets included, are loaded
strictly on top. Nothing is re-drawn.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn

from embtie.errors import DataError
from embtie.hf._require import require_transformers
from embtie.hf.patch import apply

WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"


def _weight_files(path: Path) -> list[Path]:
    if (path / WEIGHTS).is_file():
        return [path / WEIGHTS]
    index = path / WEIGHTS_INDEX
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [path / s for s in shards]
    raise DataError(f"no {WEIGHTS} or {WEIGHTS_INDEX} in {path}; save the model with model.save_pretrained(path)")


def load(path: str | Path, *, device: str | torch.device | None = None, dtype: torch.dtype | None = None) -> nn.Module:
    """Load a model saved by ``save_pretrained`` after ``embtie.hf.apply``; returns it in eval mode.

    dtype: defaults to the dtype the sharing object's weights were saved in.
    """
    transformers = require_transformers()
    path = Path(path)
    if not (path / "config.json").is_file():
        raise DataError(f"no config.json in {path}; give the directory written by model.save_pretrained")
    config = transformers.AutoConfig.from_pretrained(str(path))
    record = getattr(config, "embtie", None)
    if not isinstance(record, dict) or "strategy" not in record:
        raise DataError(f"{path} was not saved from a model patched by embtie.hf.apply; load it with from_pretrained")
    base = getattr(transformers, record["base_class"], None)
    if base is None:
        raise DataError(f"transformers {transformers.__version__} has no model class {record['base_class']!r}")
    state: dict[str, torch.Tensor] = {}
    for f in _weight_files(path):
        state.update(load_file(str(f)))
    if dtype is None:
        saved = state.get("embtie_sharing.weight")
        dtype = saved.dtype if saved is not None else torch.float32
    model = base(config)
    apply(
        model,
        record["strategy"],
        copy_weights=False,
        logits_with_labels=record.get("logits_with_labels", False),
        **record["options"],
    )
    model.config.embtie = record  # keep the conventions recorded when the strategy was first applied
    model.to(dtype=dtype)
    result = model.load_state_dict(state, strict=False)
    allowed_missing = set(getattr(base, "_keys_to_ignore_on_save", None) or [])
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
