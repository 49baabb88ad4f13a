"""The ``data`` section of a language-modelling run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from embtie.data.lm_corpora import Corpus
from embtie.data.user_corpus import SOURCE_FORM, TOKENIZER_FORM, is_source, is_tokenizer
from embtie.errors import ConfigError
from embtie.schema import Declared, Rule, Setting

OWN_WORDS_MIN_COUNT = 2
OWN_WORDS_MAX_VOCAB = 10000
"""PTB's recipe for a word vocabulary of raw text: singletons out, 10,000 entries at most."""


@dataclass
class LMDataConfig(Declared):
    """Corpus and batching of a language-modelling run."""

    section = "data"

    dataset: Annotated[
        Literal["ptb", "wikitext-2"] | None,
        Setting("the corpus (word-level); null with your own text (set so when train_file or source is given)",
                null="your own text"),
    ] = "ptb"  # fmt: skip
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
    train_file: Annotated[
        str | None,
        Setting(
            "your own corpus instead of dataset: plain text, one sentence a line (with valid_file, test_file)",
            null="the dataset's train split",
        ),
    ] = None
    valid_file: Annotated[
        str | None, Setting("your own validation text (with train_file or source)", null="the dataset's valid split")
    ] = None
    test_file: Annotated[
        str | None, Setting("your own test text (with train_file or source)", null="the dataset's test split")
    ] = None
    source: Annotated[
        str | None,
        Setting(
            "your own corpus as a Hugging Face datasets dataset: hf:PATH_OR_NAME (a save_to_disk folder, a local "
            ".json/.jsonl/.csv/.parquet/.txt file, or a name in the local datasets cache); splits "
            "train/validation/test",
            null="dataset or train_file",
            rule=Rule(is_source, SOURCE_FORM),
        ),
    ] = None
    text_column: Annotated[str, Setting("the column of source that holds the text")] = "text"
    tokenizer: Annotated[
        str,
        Setting(
            "auto (word for PTB/WikiText, bpe for your own text), word (whitespace), bpe or unigram (a "
            "SentencePiece model of data.vocab_size pieces trained on the training split and cached in "
            "$EMBTIE_CACHE), sentencepiece:MODEL_FILE or hf:NAME_OR_PATH (a Hugging Face tokenizer, local)",
            rule=Rule(is_tokenizer, TOKENIZER_FORM),
        ),
    ] = "auto"
    vocab_size: Annotated[
        int, Setting("tokenizer bpe/unigram: pieces of the subword model (at most; the text may support fewer)", ge=8)
    ] = 8000
    normalize: Annotated[
        Literal["none", "lower", "ptb"],
        Setting(
            "before tokenizing: none, lower (lowercase) or ptb (lowercase, punctuation split from words, numbers "
            "as N); bits per byte still count the original text"
        ),
    ] = "none"
    min_count: Annotated[
        int | None,
        Setting(
            "keep training tokens seen at least this often; the rest become <unk>",
            ge=1,
            null="2 for your own text with tokenizer word, else 1",
        ),
    ] = None
    max_vocab: Annotated[
        int | None,
        Setting(
            "at most this many vocabulary entries, <eos> and <unk> included (the most frequent kept)",
            ge=3,
            null="10000 for your own text with tokenizer word, else no cap",
        ),
    ] = None

    def corpus(self) -> Corpus:
        """Where the text comes from and how it becomes tokens, with ``auto`` and the nulls resolved: your
        own text is cut into subwords (bpe) unless you ask for words, and words of your own text get a
        PTB-like vocabulary (min_count 2, at most 10,000 entries, <unk> trained)."""
        own = self.source is not None or self.train_file is not None
        tokenizer = self.tokenizer if self.tokenizer != "auto" else ("bpe" if own else "word")
        own_words = own and tokenizer == "word"
        min_count = self.min_count if self.min_count is not None else (OWN_WORDS_MIN_COUNT if own_words else 1)
        max_vocab = self.max_vocab if self.max_vocab is not None else (OWN_WORDS_MAX_VOCAB if own_words else None)
        return Corpus(self.dataset or "", self.source, self.text_column, self.train_file, self.valid_file,
                      self.test_file, tokenizer, self.normalize, min_count, max_vocab, self.vocab_size)  # fmt: skip

    def check(self) -> None:
        if self.source is not None or self.train_file is not None:
            self.dataset = None  # config.yaml records the user's files, not the preset's dataset
        elif self.dataset is None:
            raise ConfigError("data.dataset is null: give data.dataset=ptb|wikitext-2, or data.train_file=PATH")
        if self.train_tokens is not None and self.train_tokens < 2 * self.batch_size:
            raise ConfigError(f"data.train_tokens={self.train_tokens} must be >= 2 * data.batch_size")
        if self.source is not None and self.train_file is not None:
            raise ConfigError("give data.source=hf:... or data.train_file=PATH, not both")
        if self.train_file is not None and self.valid_file is None:
            raise ConfigError("data.train_file needs data.valid_file=PATH (the text perplexity is measured on)")
        if self.train_file is None and self.source is None and (self.valid_file or self.test_file):
            raise ConfigError("data.valid_file/test_file go with your own data.train_file (or data.source)")
        tokenizer = self.corpus().tokenizer
        if (
            tokenizer not in ("bpe", "unigram")
            and self.vocab_size != type(self).__dataclass_fields__["vocab_size"].default
        ):
            raise ConfigError(
                f"data.vocab_size={self.vocab_size} sizes the subword model that tokenizer bpe or unigram trains, "
                f"and data.tokenizer={tokenizer} trains none, so it would be ignored: leave it out, set "
                "data.tokenizer=bpe, or cap a word vocabulary with data.max_vocab"
            )
        given = (("max_vocab", self.max_vocab, None), ("min_count", self.min_count, 1))  # (key, value, a no-op)
        words_only = [f"data.{k}={v}" for k, v, same in given if v not in (None, same)]
        if tokenizer in ("bpe", "unigram") and words_only:
            raise ConfigError(
                f"{words_only[0]} shapes a word vocabulary, and data.tokenizer={tokenizer} trains a subword model of "
                f"data.vocab_size={self.vocab_size} pieces instead, so it does not apply: leave it out, size the "
                "pieces with data.vocab_size, or set data.tokenizer=word"
            )
