"""A transformers checkpoint folder read without loading its model: config.json as written and as
transformers reads it, which safetensors file holds which key (from the file headers only), single tensors
on demand, and the key names of the model's input embedding and output layer (from a model built on the
meta device, so no memory is spent on weights).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from torch import Tensor, nn

from embtie.errors import DataError
from embtie.hf._require import config_errors, first_line, require_transformers
from embtie.hf.config_numbers import check_numbers
from embtie.hf.families import attribute_paths

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the checkpoint, as its safetensors header describes it."""

    file: str
    """the file name inside the folder."""
    shape: tuple[int, ...]
    dtype: str


@dataclass
class CheckpointFolder:
    """A save_pretrained folder: its config (raw JSON and transformers' reading) and its tensor index."""

    path: Path
    raw_config: dict[str, Any]
    """config.json as written."""
    config: Any
    """the transformers config (``AutoConfig``) read from it."""
    tensors: dict[str, TensorInfo]
    """every key the weight files hold -> where and what (headers only)."""
    index: dict[str, Any] | None
    """model.safetensors.index.json when the weights are sharded, else None."""

    @property
    def weight_files(self) -> list[str]:
        """The safetensors file names, sorted."""
        return sorted({t.file for t in self.tensors.values()})

    def tensor(self, key: str) -> Tensor:
        """The stored tensor ``key`` (only this one is read)."""
        with safe_open(str(self.path / self.tensors[key].file), framework="pt") as f:
            return f.get_tensor(key)


def _weight_file_names(path: Path) -> tuple[list[str], dict[str, Any] | None]:
    if (path / WEIGHTS).is_file():
        return [WEIGHTS], None
    index_path = path / WEIGHTS_INDEX
    if not index_path.is_file():
        raise DataError(
            f"no {WEIGHTS} or {WEIGHTS_INDEX} in {path}; give a folder written by save_pretrained (safetensors)"
        )
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
        return sorted(set(index["weight_map"].values())), index
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise DataError(f"{index_path} is damaged ({first_line(e)}); save the model again") from None


def _headers(path: Path, names: list[str]) -> dict[str, TensorInfo]:
    tensors: dict[str, TensorInfo] = {}
    for name in names:
        try:
            with safe_open(str(path / name), framework="pt") as f:
                keys = f.keys()  # a safetensors handle lists its keys, it is not iterable
                for key in keys:
                    piece = f.get_slice(key)
                    tensors[key] = TensorInfo(name, tuple(piece.get_shape()), str(piece.get_dtype()))
        except Exception as e:  # safetensors' own error types: missing, truncated, not safetensors
            raise DataError(f"{path / name} is damaged or not a safetensors file ({first_line(e)})") from None
    return tensors


def read_folder(path: str | Path) -> CheckpointFolder:
    """The config and tensor index of the checkpoint folder ``path``; a DataError (one line) when it is not one."""
    transformers = require_transformers()
    path = Path(path)
    if not (path / CONFIG).is_file():
        raise DataError(f"no {CONFIG} in {path}; give a folder written by save_pretrained")
    try:
        raw = json.loads((path / CONFIG).read_text(encoding="utf-8"))
        config = transformers.AutoConfig.from_pretrained(str(path))
    except config_errors(OSError) as e:
        raise DataError(f"{path / CONFIG} cannot be read as a transformers config: {first_line(e)}") from None
    check_numbers(raw, path / CONFIG)
    names, index = _weight_file_names(path)
    return CheckpointFolder(path, raw, config, _headers(path, names), index)


def meta_model(folder: CheckpointFolder) -> nn.Module:
    """The model class of the folder (config.architectures, else the Auto class for its kind) built on the
    meta device: its module tree and tying, no weights."""
    transformers = require_transformers()
    architectures = folder.raw_config.get("architectures") or []
    cls = getattr(transformers, architectures[0], None) if architectures else None
    config = folder.config
    try:
        with torch.device("meta"):
            if cls is not None:
                return cls(config)
            seq2seq = config.is_encoder_decoder
            auto = transformers.AutoModelForSeq2SeqLM if seq2seq else transformers.AutoModelForCausalLM
            return auto.from_config(config)
    except config_errors() as e:
        raise DataError(
            f"transformers {transformers.__version__} cannot build the model of {folder.path} "
            f"(architectures {architectures}): {first_line(e)}"
        ) from None


def embedding_keys(model: Any) -> tuple[list[str], list[str]]:
    """(input keys, output keys): the state-dict names of every module that looks up token vectors with the
    input embedding's matrix, and of the output layer. A DataError when the model has no output layer.
    ``model``: a transformers PreTrainedModel (typed Any: mypy sees transformers as untyped)."""
    embedding, output = model.get_input_embeddings(), model.get_output_embeddings()
    if output is None:
        raise DataError(f"{type(model).__name__} has no output layer (lm_head); hf-audit needs a model with an LM head")
    holders = [embedding]
    for m in model.modules():
        weight = getattr(m, "weight", None)  # foreign: transformers modules
        if m is not output and m is not embedding and weight is embedding.weight:
            holders.append(m)
    inputs = [f"{p}.weight" for m in holders for _, _, p in attribute_paths(model, m)]
    outputs = [f"{p}.weight" for _, _, p in attribute_paths(model, output)]
    return list(dict.fromkeys(inputs)), outputs
