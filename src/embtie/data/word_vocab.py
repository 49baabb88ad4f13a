"""Word-level vocabularies for translation (Shalev et al.'s setup): whitespace-separated tokens of
tokenized, lowercased text, keeping the words seen at least ``min_count`` times in training.

Ids 0-3 are the same specials as the subword models (<pad>, <unk>, <s>, </s>); the words follow,
most frequent first (ties alphabetical), so the same text and ``min_count`` give the same ids.
A word outside the vocabulary encodes as <unk>; ``decode`` joins words with single spaces and keeps
<unk> as the literal ``<unk>`` (outputs are tokenized text, scored against tokenized references).
The vocabulary is saved as a text file, one ``word<TAB>count`` per line, in id order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from embtie.data.subwords import BOS, EOS, PAD, UNK
from embtie.errors import DataError

SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")


def count_words(texts: Iterable[str]) -> Counter[str]:
    """How often each whitespace-separated token occurs in ``texts``."""
    counts: Counter[str] = Counter()
    for line in texts:
        counts.update(line.split())
    return counts


class WordVocab:
    """A word list with the subword models' interface: ``encode``/``encode_batch`` give ids without
    BOS/EOS, ``decode`` drops pad/BOS/EOS and joins the words with spaces, ``len`` counts the specials."""

    pad_id, unk_id, bos_id, eos_id = PAD, UNK, BOS, EOS
    text_form = "tokenized"
    """the text this vocabulary reads and writes (BLEU is then computed on tokenized text)."""

    def __init__(self, words: list[str], counts: list[int] | None = None, min_count: int = 1) -> None:
        clash = [w for w in words if w in SPECIALS]
        if clash:
            raise DataError(f"word {clash[0]!r} of the vocabulary is a special symbol; remove it from the word list")
        self.words = list(SPECIALS) + list(words)
        self.counts = [0] * len(SPECIALS) + (list(counts) if counts is not None else [0] * len(words))
        self.min_count = min_count
        self.index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def from_texts(cls, texts: Iterable[str], min_count: int) -> WordVocab:
        """The words of ``texts`` seen at least ``min_count`` times, most frequent first."""
        if min_count < 1:
            raise DataError(f"min_count={min_count} must be >= 1")
        counts = count_words(texts)
        kept = sorted((w for w, c in counts.items() if c >= min_count and w not in SPECIALS),
                      key=lambda w: (-counts[w], w))  # fmt: skip
        if not kept:
            raise DataError(f"no training word occurs {min_count} times or more; lower data.min_count")
        return cls(kept, [counts[w] for w in kept], min_count)

    def __len__(self) -> int:
        return len(self.words)

    @property
    def stoi(self) -> dict[str, int]:
        """word -> id (the language-model vocabulary's name for it; word similarity looks words up here)."""
        return self.index

    def encode(self, text: str) -> list[int]:
        return [self.index.get(w, UNK) for w in text.split()]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.words[i] for i in ids if i == UNK or i > EOS)

    def pieces(self, text: str) -> list[str]:
        """The tokens of ``text`` as the model sees them (unknown words as ``<unk>``)."""
        return [self.words[i] for i in self.encode(text)]

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> None:
        lines = [f"{w}\t{c}" for w, c in zip(self.words[len(SPECIALS) :], self.counts[len(SPECIALS) :])]
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> WordVocab:
        p = Path(path)
        if not p.is_file():
            raise DataError(f"word vocabulary {p} is missing; re-run training or copy it back")
        words, counts = [], []
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
            word, sep, count = line.partition("\t")
            if not sep or not word or not count.isdigit():
                raise DataError(f"word vocabulary {p} line {n} is not `word<TAB>count`; restore the file from its run")
            words.append(word)
            counts.append(int(count))
        return cls(words, counts, min(counts, default=1))
