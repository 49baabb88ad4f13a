"""Language-modelling corpora (PTB, WikiText-2, or the user's own: ``Corpus``) and their vocabulary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from embtie.data.files import DataFile, read_text, read_user_text, require
from embtie.errors import DataError

EOS = "<eos>"
UNK = "<unk>"

LM_DATASETS: dict[str, dict[str, DataFile]] = {
    "ptb": {
        "train": DataFile("ptb/ptb.train.txt.gz", "270e0c1de69c076ee9be3fb389e0a6a3c849a03664d9a05550c6a98afd63bf4e"),
        "valid": DataFile("ptb/ptb.valid.txt", "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2"),
        "test": DataFile("ptb/ptb.test.txt", "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0"),
    },
    "wikitext-2": {
        "train": DataFile(
            "wikitext-2/train.txt.gz", "0c202e0b5d919429261b7291d9b5998f0db680c0a6700c0ff2a886d0abe055d4"
        ),
        "valid": DataFile("wikitext-2/valid.txt", "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8"),
        "test": DataFile("wikitext-2/test.txt", "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0"),
    },
}


def tokenize_lines(text: str) -> list[str]:
    """Whitespace tokens with ``<eos>`` after every line (the PTB / WikiText convention)."""
    out: list[str] = []
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        out.extend(line.split())
        out.append(EOS)
    return out


@dataclass
class Vocab:
    """Word vocabulary: ids ordered by descending train frequency (ties by first occurrence)."""

    itos: list[str]
    counts: list[int] = field(default_factory=list)
    """train frequency of each id (for diagnostics: norm vs frequency, rare words)."""

    def __post_init__(self) -> None:
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    @classmethod
    def from_tokens(cls, tokens: list[str]) -> Vocab:
        c = Counter(tokens)
        order = sorted(c, key=lambda w: -c[w])  # sorted() is stable: ties keep first-occurrence order
        return cls(order, [c[w] for w in order])

    def encode(self, tokens: list[str]) -> torch.Tensor:
        """(N,) long ids; unknown words map to ``<unk>`` (an error if the vocabulary has none)."""
        unk = self.stoi.get(UNK)
        ids = []
        for w in tokens:
            i = self.stoi.get(w, unk)
            if i is None:
                raise DataError(f"word {w!r} is not in the vocabulary and it has no {UNK} token")
            ids.append(i)
        return torch.tensor(ids, dtype=torch.long)

    @classmethod
    def of_corpus(
        cls, tokens: list[str], min_count: int = 1, max_vocab: int | None = None, train_unk: bool = False
    ) -> Vocab:
        """The vocabulary of training ``tokens``, PTB-style: the tokens seen at least ``min_count`` times,
        the most frequent first, at most ``max_vocab`` entries counting ``<eos>`` and ``<unk>``; every
        other training token counts as ``<unk>`` (a user's corpus has words in valid/test that train
        lacks; PTB and WikiText-2 carry ``<unk>`` in their text). With ``train_unk``, when no training
        token would be ``<unk>`` the rarest tokens (every one of the lowest count) become ``<unk>`` too, so
        that its row is trained. Ids by decreasing count (ties by first occurrence)."""
        c = Counter(tokens)
        order = sorted(c, key=lambda w: -c[w])  # sorted() is stable: ties keep first-occurrence order
        words = [w for w in order if w != UNK and (c[w] >= min_count or w == EOS)]
        if max_vocab is not None:  # <unk> takes one entry; <eos> is always kept
            eos = [EOS] if EOS in words else []
            top = set(eos + [w for w in words if w != EOS][: max_vocab - 1 - len(eos)])
            words = [w for w in words if w in top]
        rare = [w for w in words if w != EOS]
        if train_unk and UNK not in c and len(words) == len(c) and len(rare) > 1:
            lowest = min(c[w] for w in rare)
            words = [w for w in words if w == EOS or c[w] > lowest]
        unk = len(tokens) - sum(c[w] for w in words)
        kept = set(words)
        entries = [w for w in order if w in kept or w == UNK] + ([] if UNK in c else [UNK])
        entries.sort(key=lambda w: -(unk if w == UNK else c[w]))
        return cls(entries, [unk if w == UNK else c[w] for w in entries])

    def with_entries(self, extra: list[str]) -> Vocab:
        """This vocabulary and, after it with count 0, the entries of ``extra`` it lacks (a subword model's
        pieces that the training text never produced: valid and test can still produce them)."""
        missing = [w for w in dict.fromkeys(extra) if w not in self.stoi]
        return self if not missing else Vocab([*self.itos, *missing], [*self.counts, *[0] * len(missing)])

    def unk_count(self) -> int:
        """Training tokens counted as ``<unk>`` (0: its row is never trained)."""
        i = self.stoi.get(UNK)
        return self.counts[i] if i is not None and self.counts else 0

    def to_json(self) -> dict:
        return {"itos": self.itos, "counts": self.counts}

    @classmethod
    def from_json(cls, d: dict) -> Vocab:
        return cls(list(d["itos"]), list(d.get("counts", [])))


def split_file(dataset: str, split: str) -> DataFile:
    """The DataFile of ``dataset``'s ``split``; a clear error for unknown or unavailable splits."""
    if dataset not in LM_DATASETS:
        raise DataError(f"unknown LM dataset {dataset!r}; choose one of: {', '.join(LM_DATASETS)}")
    files = LM_DATASETS[dataset]
    if split not in files:
        raise DataError(
            f"split {split!r} of {dataset} is not available here (only {', '.join(files)}); "
            "pass your own file with --test-file PATH"
        )
    own = "pass your own file with --test-file PATH" if split == "test" else "set EMBTIE_DATA to the folder holding it"
    require([files[split]], dataset, split, own)
    return files[split]


def load_tokens(dataset: str, split: str, path: str | Path | None = None, root: Path | None = None) -> list[str]:
    """Tokens of a split (with ``<eos>``), from ``root`` (default: the data root, or the user cache when the
    root lacks the file; ``embtie.data.files.locate``), or from a user file when ``path`` is given."""
    if path is not None:
        return tokenize_lines(read_user_text(path, f"{split} file"))
    f = split_file(dataset, split)
    return tokenize_lines(read_text(f.path(root), f.sha256))


SUBWORD_TOKENIZERS = ("bpe", "unigram")
"""``data.tokenizer`` values that train a SentencePiece model on the training split (``subword_corpus``)."""


@dataclass(frozen=True)
class Corpus:
    """Where a language model's text comes from and how its lines become tokens: a dataset of the
    catalogue (``dataset``), or the user's own text files (``train_file``, ...) or datasets dataset
    (``source: hf:...``, ``text_column``), normalized (``embtie.data.normalize``) and cut by ``tokenizer``
    (``embtie.data.user_corpus``; ``bpe``/``unigram`` until ``subword_corpus`` has trained the model);
    the vocabulary keeps tokens seen ``min_count`` times, at most ``max_vocab`` (``Vocab.of_corpus``)."""

    dataset: str = "ptb"
    source: str | None = None
    text_column: str = "text"
    train_file: str | None = None
    valid_file: str | None = None
    test_file: str | None = None
    tokenizer: str = "word"
    normalize: str = "none"
    min_count: int = 1
    max_vocab: int | None = None
    vocab_size: int = 8000
    """pieces of a ``bpe``/``unigram`` model."""

    @property
    def own(self) -> bool:
        """The user's corpus (else the catalogue's ``dataset``)."""
        return self.source is not None or self.train_file is not None

    @property
    def name(self) -> str:
        return self.source or self.train_file or self.dataset if self.own else self.dataset

    def __str__(self) -> str:
        return self.name if self.tokenizer == "word" else f"{self.name} ({self.tokenizer})"

    def file_of(self, split: str) -> str | None:
        return {"train": self.train_file, "valid": self.valid_file, "test": self.test_file}.get(split)


def corpus_lines(corpus: Corpus, split: str) -> list[str]:
    """The text lines of ``split`` of the user's corpus (a file of that split wins over ``source``)."""
    from embtie.data.user_corpus import hf_texts

    path = corpus.file_of(split)
    if path is not None:
        return read_user_text(path, f"data.{split}_file").split("\n")
    if corpus.source is not None:
        return hf_texts(corpus.source, split, corpus.text_column)
    own = "--test-file PATH or data.test_file=PATH" if split == "test" else f"data.{split}_file=PATH"
    raise DataError(f"your corpus has no {split} split: give {own}")


def raw_lines(corpus: Corpus, split: str, path: str | Path | None = None) -> list[str]:
    """The lines of ``split`` (or of a user file ``path``, e.g. ``--test-file``) as the text holds them (a
    trailing empty line of a file dropped): what tokens are cut from and bits per byte are counted on."""
    if path is not None:
        lines = read_user_text(path, f"{split} file").split("\n")
    elif corpus.own:
        lines = corpus_lines(corpus, split)
    else:
        f = split_file(corpus.dataset, split)
        lines = read_text(f.path(), f.sha256).split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def text_bytes(lines: list[str]) -> int:
    """UTF-8 bytes of ``lines`` with one byte per line end (the ``<eos>`` token stands for it)."""
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def tokenize_with(lines: list[str], tokenizer: str, normalize: str = "none") -> list[str]:
    """Tokens of each line after ``normalize``, ``<eos>`` after every line (a trailing empty line adds none)."""
    from embtie.data.normalize import normalize_line
    from embtie.data.user_corpus import tokenizer as make

    if lines and lines[-1] == "":
        lines = lines[:-1]
    cut = make(tokenizer)
    out: list[str] = []
    for line in lines:
        out.extend(cut(normalize_line(line, normalize)))
        out.append(EOS)
    return out


def subword_corpus(corpus: Corpus) -> Corpus:
    """``corpus`` with a ``bpe``/``unigram`` tokenizer replaced by the SentencePiece model it names:
    trained on the (normalized) training split by ``embtie.data.subwords.train_subwords``, the path
    translation uses, and cached by a hash of that text and the options in ``$EMBTIE_CACHE/subwords``;
    any other corpus as it is."""
    if corpus.tokenizer not in SUBWORD_TOKENIZERS:
        return corpus
    from embtie.data.normalize import normalize_line
    from embtie.data.subwords import train_subwords

    lines = [normalize_line(line, corpus.normalize) for line in raw_lines(corpus, "train")]
    model = train_subwords(lines, corpus.vocab_size, model_type=corpus.tokenizer)
    return replace(corpus, tokenizer=f"sentencepiece:{model}")


def subword_pieces(tokenizer: str) -> list[str]:
    """Every piece of a ``sentencepiece:MODEL_FILE`` tokenizer but its specials (pad, unk, bos, eos); [] for
    any other tokenizer."""
    kind, _, where = tokenizer.partition(":")
    if kind != "sentencepiece":
        return []
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(Path(where).expanduser()))
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i) and not sp.is_unknown(i)]


def load_corpus_tokens(corpus: Corpus, split: str, path: str | Path | None = None) -> list[str]:
    """Tokens of ``split`` of ``corpus`` (or of a user file ``path``, e.g. ``--test-file``), by its tokenizer."""
    tokens = tokenize_with(raw_lines(corpus, split, path), corpus.tokenizer, corpus.normalize)
    if corpus.own and path is None and len(tokens) < 2:
        raise DataError(f"the {split} split of {corpus.name} holds no text; give a corpus with one sentence a line")
    return tokens
