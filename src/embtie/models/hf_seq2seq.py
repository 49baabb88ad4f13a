"""A Hugging Face encoder-decoder (Marian, BART) as a model of the ``translation`` task (``model.name: hf-seq2seq``,
``model.hf: NAME_OR_CONFIG_JSON``).

    body = transformers encoder-decoder of model.hf     MarianMTModel, BartForConditionalGeneration
    embtie.hf.adopt(body, sharing)                      its shared table (encoder, decoder) and head: the sharing object
    h = decoder's final hidden states of body(src, tgt_in)   (B, T, d)  <- forward() returns this
    loss = sharing.loss(h, tgt_out)                     computed by the task, as for transformer and rnn

``model.hf`` names a transformers config (the packaged ``marian-tiny`` or a config JSON); the body is drawn
fresh from the run's "body" stream and E keeps the strategy's own init, as for embtie's Transformer. A
save_pretrained folder is refused (out of scope: a pretrained translation model brings its own tokenizer, which
embtie's BPE vocabulary would have to be matched to).

Three-way tying: the encoder embeds with the decoder's sharing object, as Marian shares one table; the task must
have one joint vocabulary with ``data.share_encoder_embedding=true`` (``one_table``; a ConfigError names the fix).

Padding and special ids: the config is built with embtie's ids (``embtie.hf.seq2seq_body.SPECIAL_IDS``: pad =
PAD, decoder start = bos = BOS, eos = EOS), and the source's PAD positions are masked with ``attention_mask``
(src != PAD); the target's PAD positions come after its real tokens, so causal self-attention never reads them
for a real position, and the task's loss ignores them.

Decoding recomputes the decoder over the whole prefix at every step (no key/value cache): the state is the
encoder output, its mask and the prefix, all batch-first, so the base ``reorder_state`` (one index_select each)
serves beam search; Multi30k's sentences are short, so the quadratic cost is small.

transformers is imported when a model is built or its config read, never when embtie starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, cast

import torch
from torch import Tensor

from embtie.errors import ConfigError
from embtie.models.base import ModelConfig
from embtie.models.registry import register
from embtie.models.seq2seq import DecodingState, Seq2Seq, SourceEmbedding
from embtie.schema import Setting
from embtie.sharing.base import SharingStrategy


@dataclass
class HFSeq2SeqConfig(ModelConfig):
    """A Hugging Face encoder-decoder trained by embtie on the translation task (needs: pip install 'embtie[hf]')."""

    name: str = "hf-seq2seq"
    hf: Annotated[
        str,
        Setting(
            "the transformers encoder-decoder (marian or bart, fresh weights): a packaged config name (marian-tiny) "
            "or a config JSON; its one token table serves encoder, decoder and output layer"
        ),
    ] = "marian-tiny"

    @property
    def embedding_dim(self) -> int:
        return _shape(self.hf).dim

    @property
    def max_len(self) -> int:
        """max_position_embeddings: the longest source, and BOS + target, the model embeds."""
        return int(_shape(self.hf).max_len)

    def check(self) -> None:
        _shape(self.hf)  # a missing file, bad JSON, folder or causal LM is a one-line error now, not at build

    def declared_attention(self) -> tuple[int, int, tuple[int | None, ...]]:
        """Encoder self-attention layers + decoder self- and cross-attention layers, at d_model (heads x head
        dim), all full (``embtie.hf.seq2seq_body.Seq2SeqShape``)."""
        shape = _shape(self.hf)
        return shape.attention_layers, shape.attention_dim, ()


def _shape(spec: str) -> Any:
    from embtie.hf.seq2seq_body import seq2seq_shape_of

    return seq2seq_shape_of(spec)


@register("hf-seq2seq", HFSeq2SeqConfig)
class HFSeq2Seq(Seq2Seq):
    """``forward(src (B, S), tgt_in (B, T)) -> h (B, T, d)``: the decoder's final hidden states of the transformers
    encoder-decoder ``body``, whose token table and output layer are ``sharing`` (three-way tied)."""

    one_table: ClassVar[bool] = True
    reads_sharing_options: ClassVar[bool] = True
    source_state_keys: tuple[str, ...] = ()
    """none: the encoder output is selected with every row (the decoder is recomputed over the prefix, so a
    state with one row per decoding row keeps ``step`` one plain call of the body)."""

    def __init__(
        self,
        config: HFSeq2SeqConfig,
        sharing: SharingStrategy,
        src_embed: SourceEmbedding | None = None,
        sharing_options: dict[str, Any] | None = None,
    ) -> None:
        """src_embed: must be None (the encoder embeds with ``sharing``); sharing_options: the options ``sharing``
        was built with (recorded in the body's config)."""
        from embtie.hf.seq2seq_body import build_seq2seq_body

        if src_embed is not None:
            raise ConfigError(
                "model hf-seq2seq embeds source and target with one table; set data.vocab=joint and "
                "data.share_encoder_embedding=true"
            )
        super().__init__(sharing)
        self.config = config
        self.body = build_seq2seq_body(config.hf, sharing, dict(sharing_options or {}))

    @property
    def max_positions(self) -> int:
        """The body's max_position_embeddings."""
        return self.config.max_len

    def _check_length(self, n: int) -> None:
        if n > self.max_positions:
            raise ConfigError(
                f"sequence of {n} tokens exceeds the model's max_position_embeddings={self.max_positions}; raise it "
                "in the model config or shorten the input (data.max_len)"
            )

    def _decoder_states(self, **inputs: Tensor | tuple[Tensor]) -> Tensor:
        """The hidden states (B, T, d) the body's output layer is called on, for the body's keyword ``inputs``;
        the N x V logits are never built (``EmbtieHead.capture``)."""
        head = cast(Any, self.body).get_output_embeddings()  # an embtie.hf.modules.EmbtieHead
        with head.capture() as captured:
            self.body(**inputs, use_cache=False)
        out: Tensor = captured[0]
        return out

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src (B, S), tgt_in (B, T) long -> h (B, T, d), teacher forcing."""
        self._check_length(max(src.shape[1], tgt_in.shape[1]))
        return self._decoder_states(input_ids=src, attention_mask=self.source_mask(src), decoder_input_ids=tgt_in)

    def start(self, src: Tensor) -> DecodingState:
        """src (B, S) -> {"memory": encoder output (B, S, d), "mask": (B, S) bool, "prefix": (B, 0) long}."""
        self._check_length(src.shape[1])
        mask = self.source_mask(src)
        encoder = cast(Any, self.body).get_encoder()
        memory = encoder(input_ids=src, attention_mask=mask).last_hidden_state
        return {"memory": memory, "mask": mask, "prefix": src.new_empty((src.shape[0], 0))}

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """prev (B,) -> (h (B, d) at the new position, the state with prev appended to the prefix); the decoder
        runs over the whole prefix (B, t + 1)."""
        prefix = torch.cat([state["prefix"], prev[:, None]], dim=1)
        self._check_length(prefix.shape[1])
        h = self._decoder_states(
            encoder_outputs=(state["memory"],), attention_mask=state["mask"], decoder_input_ids=prefix
        )
        return h[:, -1], {**state, "prefix": prefix}
