"""The transformers encoder-decoder inside embtie's ``hf-seq2seq`` translation model
(``embtie.models.hf_seq2seq``): its config (``model.hf``: a packaged name such as ``marian-tiny`` or a config
JSON), made for the task's vocabulary and special ids, and the model built from it with fresh weights, then given
the run's sharing object with ``embtie.hf.adopt`` (the one patcher: embedding, encoder and decoder tables and the
output layer become the sharing object).

Special ids: the config's own ids name tokens of another vocabulary, so embtie's are written over them:
``pad_token_id`` = PAD, ``bos_token_id`` = ``decoder_start_token_id`` = BOS (embtie's decoder input starts with
BOS), ``eos_token_id`` = EOS, ``forced_eos_token_id`` = None; ``vocab_size`` (and Marian's
``decoder_vocab_size``) is the task's joint vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from torch import nn

from embtie.data.subwords import BOS, EOS, PAD
from embtie.errors import ConfigError
from embtie.hf._require import config_errors, first_line, require_transformers
from embtie.hf.patch import adopt
from embtie.hf.sources import read_model_config
from embtie.sharing.base import SharingStrategy

SEQ2SEQ_FAMILIES = ("marian", "bart")
"""the encoder-decoders ``hf-seq2seq`` trains: one token table for encoder, decoder and output layer."""

SPECIAL_IDS = {
    "pad_token_id": PAD,
    "bos_token_id": BOS,
    "decoder_start_token_id": BOS,
    "eos_token_id": EOS,
    "forced_eos_token_id": None,
}
"""embtie's special ids, written over the config's (module docstring)."""


def seq2seq_config(raw: dict[str, Any], vocab_size: int):
    """The transformers config of ``raw`` for ``vocab_size`` tokens and embtie's special ids; a ConfigError for
    a bad config, a causal LM, an unsupported family or separate encoder/decoder tables."""
    transformers = require_transformers()
    model_type = raw["model_type"]
    drop = ("model_type", "architectures", "transformers_version", "dtype", "torch_dtype", "decoder_vocab_size")
    kwargs = {k: v for k, v in raw.items() if k not in drop}
    kwargs.update(vocab_size=vocab_size, **SPECIAL_IDS)
    try:
        config = transformers.AutoConfig.for_model(model_type, **kwargs)
    except config_errors() as e:
        raise ConfigError(f"bad model config for {model_type!r}: {first_line(e)}") from None
    if not config.is_encoder_decoder:
        raise ConfigError(
            f"model.name=hf-seq2seq trains encoder-decoders ({', '.join(SEQ2SEQ_FAMILIES)}); {model_type} is a causal "
            "LM: train it with model.name=hf on the lm task"
        )
    if model_type not in SEQ2SEQ_FAMILIES:
        raise ConfigError(
            f"model_type {model_type!r} is not an encoder-decoder hf-seq2seq knows; choose one of: "
            f"{', '.join(SEQ2SEQ_FAMILIES)}"
        )
    if not raw.get("share_encoder_decoder_embeddings", True):
        raise ConfigError(
            "hf-seq2seq shares one token table between encoder and decoder; set share_encoder_decoder_embeddings "
            "to true in the model config"
        )
    return config


@dataclass(frozen=True)
class Seq2SeqShape:
    """What embtie's config needs of an encoder-decoder before building it."""

    dim: int
    """d_model: the width of the token table and of the decoder's hidden states."""
    max_len: int
    """max_position_embeddings: the longest source, and target prefix, the model embeds."""
    encoder_layers: int
    decoder_layers: int

    @property
    def attention_layers(self) -> int:
        """Dot-product attention modules: self-attention in each encoder layer, self- and cross-attention in each
        decoder layer."""
        return self.encoder_layers + 2 * self.decoder_layers

    @property
    def attention_dim(self) -> int:
        """The width QK^T and AV run at: heads x (d_model / heads) = d_model for Marian and BART."""
        return self.dim


@lru_cache(maxsize=32)
def seq2seq_shape_of(spec: str) -> Seq2SeqShape:
    """The shape of the encoder-decoder ``spec`` names (a packaged name or a config JSON; cached)."""
    if Path(spec).expanduser().is_dir():
        raise ConfigError(
            f"model.hf={spec} is a save_pretrained folder; hf-seq2seq trains fresh weights from a config: give a "
            "packaged name (marian-tiny) or a transformers config JSON"
        )
    config = seq2seq_config(read_model_config(spec), 8)
    return Seq2SeqShape(
        dim=int(config.d_model),
        max_len=int(config.max_position_embeddings),
        encoder_layers=int(config.encoder_layers),
        decoder_layers=int(config.decoder_layers),
    )


def build_seq2seq_body(spec: str, sharing: SharingStrategy, options: dict[str, Any]) -> nn.Module:
    """The patched transformers encoder-decoder of ``spec`` whose token tables and output layer are ``sharing``:
    fresh weights from the caller's RNG, E as ``sharing`` drew it. ``options``: those ``sharing`` was built with."""
    transformers = require_transformers()
    seq2seq_shape_of(spec)  # refuses a folder
    config = seq2seq_config(read_model_config(spec), sharing.vocab_size)
    try:
        body = transformers.AutoModelForSeq2SeqLM.from_config(config)
    except config_errors() as e:  # a value the model's layers refuse (heads, activation)
        raise ConfigError(
            f"transformers cannot build an encoder-decoder from this model config ({first_line(e)}): fix that value "
            "in the config"
        ) from None
    return adopt(body.train(), sharing, options, copy_weights=False)
