"""What the config reader and the tasks may ask of every registered model config.

A model config is a dataclass with a ``name`` field (the registry key). Subclassing ``ModelConfig``
declares the facts that code outside the model reads, so that nobody has to probe a config for them:

- ``embedding_dim``: the width of the embeddings and of the hidden states the output layer reads,
  i.e. the ``dim`` of the sharing object built for the model.
- ``max_len``: the longest token sequence the model reads at once, or None when it has no limit
  (a language model's ``data.bptt`` must not exceed it).
- its fields are declared (``embtie.schema.setting``: type, default, range, meaning): making an
  instance checks every one (``model.<field>``), then ``check()``, the rules between fields (ConfigError).
"""

from __future__ import annotations

from embtie.schema import Declared


class ModelConfig(Declared):
    """Base of every registered model config (``embtie.models.register`` refuses other classes)."""

    section = "model"
    name: str

    @property
    def embedding_dim(self) -> int:
        """Width of the sharing object (embedding rows and the hidden states fed to the output layer)."""
        raise NotImplementedError(f"{type(self).__name__} does not say its embedding width")

    @property
    def max_len(self) -> int | None:
        """Longest token sequence the model reads at once; None: no limit."""
        return None

    def declared_attention(self) -> tuple[int, int, tuple[int | None, ...]] | None:
        """(dot-product attention modules, the width QK^T and AV run at, each one's sliding window or None) for a
        model whose attention modules are not embtie's (a Hugging Face body: its config says); None, the
        default: ``embtie plan`` counts embtie's own attention modules, full, at the model's width."""
        return None
