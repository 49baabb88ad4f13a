"""The transformers model inside embtie's ``hf`` language model (``embtie.models.hf_causal_lm``): built from a
config or loaded from a checkpoint, then given the run's sharing object with ``embtie.hf.adopt``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from embtie.errors import ConfigError
from embtie.hf._require import config_errors, first_line, require_transformers
from embtie.hf.checkpoint_files import read_folder
from embtie.hf.patch import adopt
from embtie.hf.sources import build_model, model_config, read_model_config, shape_of
from embtie.hf.vocab_transfer import checkpoint_tokens, match, transfer_tables
from embtie.sharing.base import SharingStrategy


def build_body(
    spec: str, sharing: SharingStrategy, vocabulary: Sequence[str], options: dict[str, Any]
) -> tuple[nn.Module, int]:
    """(the patched transformers model of ``spec`` whose tables are ``sharing``, the number of task tokens a
    checkpoint had no row for). A config: fresh weights from the caller's RNG, E as ``sharing`` drew it. A
    save_pretrained folder: the checkpoint's weights, its token rows (matched to ``vocabulary``) copied into
    ``sharing``."""
    if not shape_of(spec).pretrained:
        body = build_model(model_config(read_model_config(spec), sharing.vocab_size))
        return adopt(body.train(), sharing, options, copy_weights=False), 0
    folder = Path(spec).expanduser()
    read_folder(folder)  # one line for a damaged config or weights file, before transformers reads them
    if len(vocabulary) != sharing.vocab_size:
        raise ValueError(f"vocabulary of {len(vocabulary)} tokens for a sharing object of {sharing.vocab_size} rows")
    transfer = match(vocabulary, checkpoint_tokens(folder))
    transformers = require_transformers()
    transformers.utils.logging.disable_progress_bar()  # embtie's own progress says what a run does
    try:
        body = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder), local_files_only=True, dtype=torch.float32
        )
    except config_errors(OSError) as e:
        raise ConfigError(f"transformers cannot load the model in {folder} ({first_line(e)}); save it again") from None
    transfer_tables(body, transfer)
    return adopt(body.train(), sharing, options, copy_weights=True), transfer.missing


def layers(body: nn.Module) -> list[nn.Module]:
    """The repeated transformer layers of ``body`` (the largest ModuleList): the FSDP units."""
    lists = [m for m in body.modules() if isinstance(m, nn.ModuleList)]
    if not lists:
        return []
    return list(max(lists, key=len))

