"""The ``data`` section of a language-modelling run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from embtie.errors import ConfigError
from embtie.schema import Declared, Setting


@dataclass
class LMDataConfig(Declared):
    """Corpus and batching of a language-modelling run."""

    section = "data"

    dataset: Annotated[Literal["ptb", "wikitext-2"], Setting("the corpus (word-level)")] = "ptb"
    bptt: Annotated[int, Setting("tokens per training window (the context length of a GPT)", ge=1)] = 35
    batch_size: Annotated[int, Setting("parallel streams per step, over all processes (the global batch)", ge=1)] = 20
    eval_batch_size: Annotated[int, Setting("parallel streams of an evaluation (fewer for short files)", ge=1)] = 10
    shuffle: Annotated[bool, Setting("visit training windows in a random order each epoch (stateless models only)")] = (
        False
    )
    train_tokens: Annotated[
        int | None,
        Setting(
            "use only the first N training tokens (quick runs, tests); at least 2 * batch_size; the vocabulary "
            "still comes from all",
            ge=2,
            null="all",
        ),
    ] = None
    valid_tokens: Annotated[
        int | None,
        Setting(
            "use only the first N tokens of the valid split (quick runs, tests); a --test-file is always whole",
            ge=2,
            null="all",
        ),
    ] = None

    def check(self) -> None:
        if self.train_tokens is not None and self.train_tokens < 2 * self.batch_size:
            raise ConfigError(f"data.train_tokens={self.train_tokens} must be >= 2 * data.batch_size")
