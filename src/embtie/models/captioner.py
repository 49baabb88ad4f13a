"""What every captioning model offers the task and the decoders.

A captioner is built as ``Model(config, sharing)`` and never inspects the sharing object by name: the
word embedding is ``sharing.embed`` and the logits are ``sharing.logits(h)`` (or the task's
``sharing.loss(h, y)``), so untied, tied, fixed and every other strategy plug in unchanged.

- ``feature_kind``: which cached image features it reads: "pooled" (B, C) or "spatial" (B, L, C).
- Training (teacher forcing): ``forward(feats, tgt_in) -> (h (B, T, d), penalty)``; ``tgt_in`` is
  <s> w_1 .. w_n padded, the targets are w_1 .. w_n </s>; ``penalty`` is a scalar added to the loss
  (Show-Attend-Tell's doubly stochastic attention term; zero otherwise).
- Decoding (``embtie.evaluation.beam_search``'s ``IncrementalDecoder``, through ``bind``, which fixes the
  images: the searches start from a token tensor): ``begin(feats)``, then ``next_logprobs(prev, state)``
  per output position; ``reorder_state`` selects beam rows.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from torch import Tensor, nn

from embtie.data.subwords import EOS
from embtie.models.seq2seq import DecodingState, map_state
from embtie.sharing.base import SharingStrategy

FeatureKind = Literal["pooled", "spatial"]


class Captioner(nn.Module):
    """Base of the captioning models: sharing object, regularization and the decoding interface."""

    feature_kind: ClassVar[FeatureKind] = "pooled"
    source_state_keys: tuple[str, ...] = ()
    """decoding-state entries that depend only on the image (beam search leaves them alone)."""

    sharing: SharingStrategy

    def __init__(self, sharing: SharingStrategy) -> None:
        super().__init__()
        self.sharing = sharing

    def regularization(self) -> Tensor:
        """The sharing object's regularizer (a scalar)."""
        return self.sharing.regularization()

    def forward(self, feats: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """feats (B, C) or (B, L, C), tgt_in (B, T) -> (h (B, T, d), penalty scalar)."""
        raise NotImplementedError

    def begin(self, feats: Tensor) -> DecodingState:
        """The decoding state before the first word (after reading the image)."""
        raise NotImplementedError

    def step(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """prev (B,) the previous word (<s> first) -> (h (B, d), next state)."""
        raise NotImplementedError

    def reorder_state(self, state: DecodingState, index: Tensor) -> DecodingState:
        """Select batch rows ``index`` (N,) of every tensor in the state (beam search)."""
        reordered: DecodingState = map_state(state, lambda t: t.index_select(0, index))
        return reordered

    def next_logprobs(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """prev (B,) -> (log-probabilities (B, V) in float32, next state)."""
        h, state = self.step(prev, state)
        return torch.log_softmax(self.sharing.logits(h).float(), dim=-1), state

    def bind(self, feats: Tensor) -> BoundCaptioner:
        """This model with its images fixed, in the shape ``embtie.evaluation.beam_search`` drives."""
        return BoundCaptioner(self, feats)


class BoundCaptioner:
    """A captioner with its image features bound, so that ``embtie.evaluation.beam_search``'s ``greedy`` and
    ``beam_search`` (which call ``start(src)`` with a token tensor) can decode it: ``start`` ignores its
    argument. Decode with a (B, 1) zero "source" and ``max_len_ratio=0, max_len_extra=max_len``: every
    caption may then have ``max_len`` words before its </s>."""

    max_positions: int | None = None
    """no position table: the caption's length is bounded by the search's max_len_extra alone."""

    def __init__(self, model: Captioner, feats: Tensor) -> None:
        self.model, self.feats = model, feats
        self.source_state_keys = model.source_state_keys

    def start(self, src: Tensor) -> DecodingState:
        return self.model.begin(self.feats)

    def next_logprobs(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]:
        """As the model's, except that a row whose previous word is </s> gets -inf everywhere: a beam that
        has ended is dead (``beam_search`` may keep one alive when the beam is wider than the live
        continuations, e.g. an exhaustive search over a tiny vocabulary)."""
        lp, state = self.model.next_logprobs(prev, state)
        return lp.masked_fill((prev == EOS).unsqueeze(-1), float("-inf")), state

    def reorder_state(self, state: DecodingState, index: Tensor) -> DecodingState:
        return self.model.reorder_state(state, index)
