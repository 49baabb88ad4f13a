"""What every translation model offers the loss and the decoders, whatever its architecture.

A model is built as ``Model(config, sharing, src_embed=None)`` from objects the caller passes in and
never inspects by name:

* ``sharing``: the decoder's sharing strategy: decoder input vectors and output logits.
* ``src_embed``: the encoder input's ``embed(ids) -> vectors``. ``None`` means the decoder's sharing
  object itself (one vocabulary, three-way tying); with separate vocabularies it is a
  ``PlainEmbedding`` (or any sharing object of the source vocabulary).

Training: ``forward(src, tgt_in) -> h`` (B, T, d); the loss is ``sharing.loss(h, tgt_out, ...)`` plus
``regularization()``, computed by the task, never here. Decoding is incremental:
``state = start(src)``, then ``next_logprobs(prev, state)`` once per output position. Every tensor
in a decoding state has the batch as its first dimension, so ``reorder_state`` is one index_select.
What the decoders read besides (``source_state_keys``, ``max_positions``) is declared on ``Seq2Seq``
with defaults that a model overrides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie.data.subwords import PAD
from embtie.sharing.base import SharingStrategy
from embtie.sharing.capabilities import VocabularyTables

DecodingState = dict[str, Any]
"""a model's incremental decoding state: tensors (batch first), lists of them, and plain values."""


class PlainEmbedding(VocabularyTables):
    """A lookup table with the sharing objects' input interface: ``embed(ids) = scale * E[ids]``.

    Used for the encoder when source and target vocabularies differ (only the decoder shares).
    """

    def __init__(self, vocab_size: int, dim: int, *, embed_scale: float = 1.0, init_std: float | None = None) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.dim = dim
        self.embed_scale = embed_scale
        self.weight = nn.Parameter(torch.empty(vocab_size, dim))
        with torch.no_grad():
            self.weight.normal_(0.0, dim**-0.5 if init_std is None else init_std)

    def embed(self, ids: Tensor) -> Tensor:
        """(...,) ids -> (..., d)."""
        x = F.embedding(ids, self.weight)
        return x * self.embed_scale if self.embed_scale != 1.0 else x

    def regularization(self) -> Tensor:
        """Zero: a plain table has no penalty (declared so that the model sums every embedding's)."""
        return self.weight.new_zeros(())


SourceEmbedding = SharingStrategy | PlainEmbedding
"""what embeds the encoder input: the decoder's sharing object, another one, or a plain table."""


def map_state(state: Any, fn: Callable[[Tensor], Tensor]) -> Any:
    """Apply ``fn`` to every tensor of a (nested dict/list/tuple) state; other values pass through."""
    if isinstance(state, Tensor):
        return fn(state)
    if isinstance(state, dict):
        return {k: map_state(v, fn) for k, v in state.items()}
    if isinstance(state, list | tuple):
        return type(state)(map_state(v, fn) for v in state)
    return state


class Seq2Seq(nn.Module):
    """Base of the encoder-decoder models: embeddings, regularization, and the decoding interface."""

    source_state_keys: tuple[str, ...] = ()
    """Decoding-state entries that depend only on the source sentence (e.g. the encoder memory):
    beam search leaves them alone while every row keeps decoding its own sentence."""

    one_table: ClassVar[bool] = False
    """True: the model embeds source and target with the decoder's sharing object and nothing else (three-way
    tying is built into it, as in a Hugging Face Marian); the translation task then needs ``data.vocab=joint``
    and ``data.share_encoder_embedding=true``."""

    reads_sharing_options: ClassVar[bool] = False
    """True: the constructor also takes ``sharing_options``, the options the sharing object was built with (a
    Hugging Face body records them)."""

    sharing: SharingStrategy
    src_embed: SourceEmbedding

    def __init__(self, sharing: SharingStrategy, src_embed: SourceEmbedding | None = None) -> None:
        super().__init__()
        self.sharing = sharing
        self.src_embed = sharing if src_embed is None else src_embed

    @property
    def max_positions(self) -> int | None:
        """Positions the model can embed (BOS and the output tokens of a decoded sentence); None: no limit."""
        return None

    @property
    def three_way_tied(self) -> bool:
        """True when the encoder input is the decoder's own sharing object."""
        return self.src_embed is self.sharing

    def regularization(self) -> Tensor:
        """Sum of the distinct embedding objects' regularizers (a scalar)."""
        total = self.sharing.regularization()
        if not self.three_way_tied:
            total = total + self.src_embed.regularization()
        return total

    # ---------------------------------------------------------------- to implement
    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src (B, S), tgt_in (B, T) -> decoder hidden states h (B, T, d) (teacher forcing)."""
        raise NotImplementedError

    def start(self, src: Tensor) -> DecodingState:
        """Encode src (B, S) and return the decoding state before the first output token."""
        raise NotImplementedError

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """prev (B,) the previous output token (BOS first) -> (h (B, d), next state)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- shared
    @staticmethod
    def source_mask(src: Tensor) -> Tensor:
        """(B, S) bool, True at real (non-pad) source positions."""
        return src != PAD

    def reorder_state(self, state: DecodingState, index: Tensor) -> DecodingState:
        """Select batch rows ``index`` (N,) of every tensor in the state (beam search)."""
        reordered: DecodingState = map_state(state, lambda t: t.index_select(0, index))
        return reordered

    def next_logits(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """prev (B,) -> (logits (B, V) in float32, next state)."""
        h, state = self.step(prev, state)
        return self.sharing.logits(h).float(), state

    def next_logprobs(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """prev (B,) -> (log-probabilities (B, V) in float32, next state)."""
        z, state = self.next_logits(prev, state)
        return torch.log_softmax(z, dim=-1), state
