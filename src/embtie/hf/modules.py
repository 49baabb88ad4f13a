"""The two modules a patched Hugging Face model holds in place of its own embedding and output layer.

Both serve one sharing object. They keep a plain (unregistered) reference to it: the model registers
the sharing object once, as ``model.embtie_sharing``, so its tensors appear once in ``state_dict()``
(safetensors refuses aliased tensors) and ``model.to(...)`` moves them once. Tying is therefore a
property of the object graph, not something to re-establish after loading.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import Tensor, nn

from embtie.hf.peft_compat import active_sharing
from embtie.sharing.base import SharingStrategy

OWNER_ATTR = "embtie_sharing"
"""The attribute of the patched model that registers the sharing object."""


class _SharingUser(nn.Module):
    """A module that uses a sharing object owned (registered) elsewhere.

    With an ``owner`` (the patched model) the object is looked up as ``owner.embtie_sharing`` on every use,
    so that whatever replaces it there (a resized object, peft's modules_to_save wrapper and, after
    ``merge_and_unload()``, its trained copy) is used by the embedding and the head alike: the tie holds."""

    def __init__(self, sharing: SharingStrategy, owner: nn.Module | None = None) -> None:
        super().__init__()
        self.bind(sharing)
        object.__setattr__(self, "_owner", owner)

    @property
    def sharing(self) -> SharingStrategy:
        owner = self.__dict__.get("_owner")
        registered = owner._modules.get(OWNER_ATTR) if owner is not None else None
        if registered is None:
            return self.__dict__["_sharing"]
        return active_sharing(registered)

    def bind(self, sharing: SharingStrategy) -> None:
        """Point this module at ``sharing`` without registering it as a submodule."""
        object.__setattr__(self, "_sharing", sharing)


class EmbtieEmbedding(_SharingUser):
    """Input embedding: ids (...,) long -> (..., d) = ``sharing.embed(ids)`` (embed_scale included)."""

    @property
    def weight(self) -> Tensor:
        """(V, d) the learned matrix E of the sharing object. Read-only: assigning a Parameter here raises,
        so code that tries to re-tie weights fails loudly instead of silently untying."""
        return self.sharing.weight

    @property
    def num_embeddings(self) -> int:
        return self.sharing.vocab_size

    @property
    def embedding_dim(self) -> int:
        return self.sharing.dim

    def forward(self, input_ids: Tensor) -> Tensor:
        return self.sharing.embed(input_ids)

    def extra_repr(self) -> str:
        return f"strategy={self.sharing.name!r}, vocab_size={self.sharing.vocab_size}, dim={self.sharing.dim}"


class EmbtieHead(_SharingUser):
    """Output layer: h (..., d) -> logits (..., V) = ``sharing.logits(h)``.

    Inside ``capture()`` it records h instead and returns an empty (..., 0) tensor, so that the model's
    forward runs to the end without building the N x V logits; the caller computes the loss from h
    with ``sharing.loss`` (memory-lean).
    """

    def __init__(self, sharing: SharingStrategy, owner: nn.Module | None = None) -> None:
        super().__init__(sharing, owner)
        self._captured: list[Tensor] | None = None

    @property
    def in_features(self) -> int:
        return self.sharing.dim

    @property
    def out_features(self) -> int:
        return self.sharing.vocab_size

    @contextmanager
    def capture(self) -> Iterator[list[Tensor]]:
        """Record the hidden states this head is called on (a list, filled during the ``with`` block)."""
        captured: list[Tensor] = []
        self._captured = captured
        try:
            yield captured
        finally:
            self._captured = None

    def forward(self, hidden_states: Tensor) -> Tensor:
        if self._captured is not None:
            self._captured.append(hidden_states)
            return hidden_states.new_empty((*hidden_states.shape[:-1], 0))
        return self.sharing.logits(hidden_states)

    def extra_repr(self) -> str:
        return f"strategy={self.sharing.name!r}, dim={self.sharing.dim}, vocab_size={self.sharing.vocab_size}"
