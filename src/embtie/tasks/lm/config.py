"""The ``data`` section of a language-modelling run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from embtie.errors import ConfigError


@dataclass
class LMDataConfig:
    """Corpus and batching of a language-modelling run."""

    dataset: Literal["ptb", "wikitext-2"] = "ptb"
    bptt: int = 35
    """tokens per training window (the context length of a GPT)."""
    batch_size: int = 20
    """parallel streams per step, over all processes (the global batch)."""
    eval_batch_size: int = 10
    shuffle: bool = False
    """visit training windows in a random order each epoch (stateless models only)."""
    train_tokens: int | None = None
    """use only the first N training tokens (quick runs, tests); the vocabulary still comes from all."""
    valid_tokens: int | None = None
    """use only the first N tokens of the valid split (quick runs, tests); a --test-file is always whole."""

    def validate(self) -> None:
        for k in ("bptt", "batch_size", "eval_batch_size"):
            if getattr(self, k) < 1:
                raise ConfigError(f"data.{k}={getattr(self, k)} must be >= 1")
        if self.train_tokens is not None and self.train_tokens < 2 * self.batch_size:
            raise ConfigError(f"data.train_tokens={self.train_tokens} must be >= 2 * data.batch_size")
