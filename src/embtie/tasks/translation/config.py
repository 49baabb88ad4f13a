"""The ``data`` section of a translation run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from embtie.data.subwords import MAX_VOCAB_SIZE
from embtie.errors import ConfigError
from embtie.schema import Declared, Setting


@dataclass
class MTDataConfig(Declared):
    """Corpus, subwords, batching and decoding of a translation run."""

    section = "data"

    dataset: Annotated[
        Literal["multi30k", "iwslt14", "wmt16", "wmt14"],
        Setting(
            "the parallel corpus; multi30k ships train/valid; its test sets, iwslt14's train/test and the WMT sets "
            "come with embtie data get NAME (the papers' preparations)"
        ),
    ] = "multi30k"
    src_lang: Annotated[Literal["de", "en"], Setting("the source language")] = "de"
    tgt_lang: Annotated[Literal["de", "en"], Setting("the target language (not the source's)")] = "en"
    train_split: Annotated[
        str,
        Setting(
            "the dataset split trained on; iwslt14's train split comes with embtie data get iwslt14; or give "
            "train_src_file/train_tgt_file, or train_split=valid for a smoke run"
        ),
    ] = "train"
    train_src_file: Annotated[
        str | None,
        Setting(
            "your own training source text (one sentence a line), instead of the dataset's train split",
            null="the dataset's split",
        ),
    ] = None
    train_tgt_file: Annotated[
        str | None,
        Setting("the target side of train_src_file, line-aligned (give both or neither)", null="the dataset's split"),
    ] = None
    valid_src_file: Annotated[
        str | None,
        Setting(
            "your own validation source text, line-aligned with valid_tgt_file, instead of the dataset's valid "
            "split; in the form of your training files (tokenized for tokenizer: word)",
            null="the dataset's split",
        ),
    ] = None
    valid_tgt_file: Annotated[
        str | None,
        Setting("the target side of valid_src_file, line-aligned (give both or neither)", null="the dataset's split"),
    ] = None
    test_src_file: Annotated[
        str | None,
        Setting(
            "your own test source text, read by embtie eval RUN --split test (--src-file/--ref-file still win)",
            null="the dataset's test split",
        ),
    ] = None
    test_tgt_file: Annotated[
        str | None,
        Setting("the target side of test_src_file, line-aligned (give both or neither)", null="the dataset's split"),
    ] = None
    valid_split: Annotated[str, Setting("the dataset split validated on")] = "valid"
    tokenizer: Annotated[
        Literal["bpe", "word"],
        Setting(
            "bpe: SentencePiece subwords of the cased text; word: whitespace tokens of the dataset's tokenized, "
            "lowercased text (user train files must be tokenized the same way), scored as tokenized text"
        ),
    ] = "bpe"
    min_count: Annotated[
        int,
        Setting("word tokenizer: keep training words seen at least this often (joint: in both languages)", ge=1),
    ] = 2
    vocab: Annotated[
        Literal["joint", "separate"],
        Setting("joint: one BPE model for both languages (three-way tying possible); separate: one per language"),
    ] = "joint"
    share_encoder_embedding: Annotated[
        bool, Setting("joint vocab only: the encoder embeds with the decoder's sharing object (three-way tying)")
    ] = True
    vocab_size: Annotated[
        int,
        Setting(
            "SentencePiece vocabulary size (of each model when separate); at least the training text's distinct "
            "characters + 4 special ids; a size beyond what the text supports shrinks to it",
            ge=8,
            le=MAX_VOCAB_SIZE,
        ),
    ] = 8000
    max_tokens: Annotated[int, Setting("padded tokens (longer side x rows) per global training batch", ge=1)] = 4096
    batch_sentences: Annotated[
        int | None,
        Setting(
            "sentence pairs per global training batch (length-bucketed) instead of max_tokens",
            ge=1,
            null="max_tokens decides",
        ),
    ] = None
    eval_max_tokens: Annotated[int, Setting("padded tokens per evaluation batch", ge=1)] = 8192
    max_len: Annotated[
        int, Setting("training pairs with a side longer than this many tokens (subwords or words) are dropped", ge=1)
    ] = 128
    train_pairs: Annotated[
        int | None,
        Setting(
            "use only the first N training pairs (tests, quick runs); the subwords are learned on them too",
            ge=1,
            null="all",
        ),
    ] = None
    valid_pairs: Annotated[
        int | None, Setting("use only the first N pairs of the validation split (tests, quick runs)", ge=1, null="all")
    ] = None
    label_smoothing: Annotated[float, Setting("label smoothing of the training loss", ge=0, lt=1)] = 0.1
    beam: Annotated[int, Setting("beam width of decoding (1: greedy)", ge=1)] = 5
    lenpen: Annotated[float, Setting("length penalty of the beam ranking (fairseq's)", ge=0)] = 1.0
    max_len_ratio: Annotated[
        float, Setting("outputs have at most max_len_ratio * source_length + max_len_extra subwords", ge=0)
    ] = 1.5
    max_len_extra: Annotated[int, Setting("see max_len_ratio", ge=0)] = 10

    def own_files(self, split: str) -> tuple[str, str] | None:
        """(source, target) files of your own for ``split`` (valid: when ``split`` is ``valid_split``)."""
        key = {self.valid_split: "valid", "train": "train", "test": "test"}.get(split)
        src = getattr(self, f"{key}_src_file") if key else None
        return (src, getattr(self, f"{key}_tgt_file")) if src is not None else None

    def check(self) -> None:
        if self.src_lang == self.tgt_lang:
            raise ConfigError(f"data.src_lang and data.tgt_lang are both {self.src_lang!r}; use de->en or en->de")
        for split in ("train", "valid", "test"):
            if (getattr(self, f"{split}_src_file") is None) != (getattr(self, f"{split}_tgt_file") is None):
                raise ConfigError(f"give both data.{split}_src_file and data.{split}_tgt_file, or neither")
