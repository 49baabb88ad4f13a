"""The ``data`` section of a language-modelling run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from embtie.data.lm_corpora import Corpus
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
    train_file: str | None = None
    """your own corpus instead of ``dataset``: plain text, one sentence a line (with valid_file, test_file)."""
    valid_file: str | None = None
    test_file: str | None = None
    source: str | None = None
    """your own corpus as a Hugging Face datasets dataset: hf:PATH_OR_NAME (a save_to_disk folder, a local
    .json/.jsonl/.csv/.parquet/.txt file, or a name in the local datasets cache); splits train/validation/test."""
    text_column: str = "text"
    """the column of ``source`` that holds the text."""
    tokenizer: str = "word"
    """word (whitespace), sentencepiece:MODEL_FILE or hf:NAME_OR_PATH (a Hugging Face tokenizer, local)."""

    def corpus(self) -> Corpus:
        return Corpus(self.dataset, self.source, self.text_column, self.train_file, self.valid_file,
                      self.test_file, self.tokenizer)  # fmt: skip

    def validate(self) -> None:
        for k in ("bptt", "batch_size", "eval_batch_size"):
            if getattr(self, k) < 1:
                raise ConfigError(f"data.{k}={getattr(self, k)} must be >= 1")
        if self.train_tokens is not None and self.train_tokens < 2 * self.batch_size:
            raise ConfigError(f"data.train_tokens={self.train_tokens} must be >= 2 * data.batch_size")
        self.validate_corpus()

    def validate_corpus(self) -> None:
        from embtie.data.user_corpus import check_source, check_tokenizer

        check_tokenizer(self.tokenizer)
        if self.source is not None:
            check_source(self.source)
        if self.source is not None and self.train_file is not None:
            raise ConfigError("give data.source=hf:... or data.train_file=PATH, not both")
        if self.train_file is not None and self.valid_file is None:
            raise ConfigError("data.train_file needs data.valid_file=PATH (the text perplexity is measured on)")
        if self.train_file is None and self.source is None and (self.valid_file or self.test_file):
            raise ConfigError("data.valid_file/test_file go with your own data.train_file (or data.source)")
