"""The ``data`` section of a translation run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from embtie.errors import ConfigError


@dataclass
class MTDataConfig:
    """Corpus, subwords, batching and decoding of a translation run."""

    dataset: Literal["multi30k", "iwslt14", "wmt16", "wmt14"] = "multi30k"
    """multi30k ships train/valid; the test sets, iwslt14's train/test and the WMT sets come with
    ``embtie data get NAME`` (the papers' preparations)."""
    src_lang: Literal["de", "en"] = "de"
    tgt_lang: Literal["de", "en"] = "en"
    train_split: str = "train"
    """iwslt14's train split comes with ``embtie data get iwslt14``; or give train_src_file/train_tgt_file, or
    train_split=valid for a smoke run."""
    train_src_file: str | None = None
    """your own training source text (one sentence per line), instead of the dataset's train split."""
    train_tgt_file: str | None = None
    valid_src_file: str | None = None
    """your own validation pairs (line-aligned source/target files) instead of the dataset's valid split;
    in the form of your training files (tokenized for ``tokenizer: word``)."""
    valid_tgt_file: str | None = None
    test_src_file: str | None = None
    """your own test pairs, read by ``embtie eval RUN --split test`` (``--src-file``/``--ref-file`` still win)."""
    test_tgt_file: str | None = None
    valid_split: str = "valid"
    tokenizer: Literal["bpe", "word"] = "bpe"
    """bpe: SentencePiece subwords of the cased text; word: whitespace tokens of the dataset's tokenized,
    lowercased text (user train files must be tokenized the same way), outputs scored as tokenized text."""
    min_count: int = 2
    """word tokenizer: keep training words seen at least this often (joint: in both languages together)."""
    vocab: Literal["joint", "separate"] = "joint"
    """joint: one BPE model for both languages (three-way tying possible); separate: one per language."""
    share_encoder_embedding: bool = True
    """joint vocab only: the encoder embeds with the decoder's sharing object (three-way tying)."""
    vocab_size: int = 8000
    """SentencePiece vocabulary size (of each model when separate)."""
    max_tokens: int = 4096
    """padded tokens (longer side x rows) per global training batch."""
    batch_sentences: int | None = None
    """sentence pairs per global training batch (length-bucketed) instead of max_tokens; null: max_tokens."""
    eval_max_tokens: int = 8192
    max_len: int = 128
    """training pairs with a side longer than this many tokens (subwords or words) are dropped."""
    train_pairs: int | None = None
    """use only the first N training pairs (tests, quick runs); the subwords are learned on them too."""
    valid_pairs: int | None = None
    """use only the first N pairs of the validation split (tests, quick runs)."""
    label_smoothing: float = 0.1
    beam: int = 5
    lenpen: float = 1.0
    max_len_ratio: float = 1.5
    """outputs have at most max_len_ratio * source_length + max_len_extra subwords."""
    max_len_extra: int = 10

    def own_files(self, split: str) -> tuple[str, str] | None:
        """(source, target) files of your own for ``split`` (valid: when ``split`` is ``valid_split``)."""
        key = {self.valid_split: "valid", "train": "train", "test": "test"}.get(split)
        src = getattr(self, f"{key}_src_file") if key else None
        return (src, getattr(self, f"{key}_tgt_file")) if src is not None else None

    def validate(self) -> None:
        if self.src_lang == self.tgt_lang:
            raise ConfigError(f"data.src_lang and data.tgt_lang are both {self.src_lang!r}; use de->en or en->de")
        for k in ("vocab_size", "min_count", "max_tokens", "eval_max_tokens", "max_len", "beam"):
            if getattr(self, k) < 1:
                raise ConfigError(f"data.{k}={getattr(self, k)} must be >= 1")
        for split in ("train", "valid", "test"):
            if (getattr(self, f"{split}_src_file") is None) != (getattr(self, f"{split}_tgt_file") is None):
                raise ConfigError(f"give both data.{split}_src_file and data.{split}_tgt_file, or neither")
        if self.batch_sentences is not None and self.batch_sentences < 1:
            raise ConfigError(f"data.batch_sentences={self.batch_sentences} must be >= 1 (or null for max_tokens)")
        if self.train_pairs is not None and self.train_pairs < 1:
            raise ConfigError(f"data.train_pairs={self.train_pairs} must be >= 1 (or null for all)")
        if self.valid_pairs is not None and self.valid_pairs < 1:
            raise ConfigError(f"data.valid_pairs={self.valid_pairs} must be >= 1 (or null for all)")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"data.label_smoothing={self.label_smoothing} must be in [0, 1)")
        if self.lenpen < 0 or self.max_len_ratio < 0 or self.max_len_extra < 0:
            raise ConfigError("data.lenpen, data.max_len_ratio and data.max_len_extra must be >= 0")
