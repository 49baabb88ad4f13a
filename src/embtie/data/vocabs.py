"""The vocabularies of a translation run, by ``data.tokenizer``: SentencePiece BPE subwords (``bpe``)
or whole words of tokenized, lowercased text (``word``); joint (one for both languages) or separate.

Both kinds share one interface (``encode_batch``, ``decode``, ``len``, ids 0-3 = pad/unk/bos/eos), so
the task, models and decoding do not depend on the kind. Run directories hold their files under the
names of ``VOCAB_FILES``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from embtie.data.subwords import Subwords, train_subwords
from embtie.data.word_vocab import WordVocab

VOCAB_FILES: dict[str, dict[str, tuple[str, ...]]] = {
    "bpe": {"joint": ("spm.model",), "separate": ("spm.src.model", "spm.tgt.model")},
    "word": {"joint": ("words.txt",), "separate": ("words.src.txt", "words.tgt.txt")},
}


def learn_vocabs(
    tokenizer: str, src: list[str], tgt: list[str], *, joint: bool, vocab_size: int, min_count: int
) -> tuple[Any, Any]:
    """(source vocabulary, target vocabulary) learned on the training sentences; the same object twice when
    ``joint``. ``vocab_size`` is used by ``bpe``, ``min_count`` by ``word``."""

    def learn(texts: list[str]) -> Any:
        if tokenizer == "word":
            return WordVocab.from_texts(texts, min_count)
        return Subwords(train_subwords(texts, vocab_size))

    if joint:
        v = learn(src + tgt)
        return v, v
    return learn(src), learn(tgt)


def save_vocab(vocab: Any, dst: Path) -> None:
    """Write ``vocab`` to ``dst`` (a subword model is copied, a word list written)."""
    if isinstance(vocab, WordVocab):
        vocab.save(dst)
    else:
        shutil.copyfile(vocab.model_file, dst)


def load_vocabs(tokenizer: str, vocab: str, run_dir: Path) -> tuple[Any, Any] | None:
    """The (source, target) vocabularies saved in ``run_dir``, or None when its files are not all there."""
    names = VOCAB_FILES[tokenizer][vocab]
    d = Path(run_dir)
    if not all((d / n).is_file() for n in names):
        return None
    loaded = [WordVocab.load(d / n) if tokenizer == "word" else Subwords(d / n) for n in names]
    return (loaded[0], loaded[0]) if len(loaded) == 1 else (loaded[0], loaded[1])
