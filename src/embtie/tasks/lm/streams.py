"""The token streams of a language-modelling run.

The training tokens are cut into ``batch_size`` parallel streams (B, L); batch i of an epoch is the
window ``[i*bptt, (i+1)*bptt)`` of every stream, targets shifted by one (Zaremba et al.'s reader).
``shuffle`` visits the windows in a per-epoch random order instead (for stateless models). Under
DDP, rank r of W takes streams [r*B/W, (r+1)*B/W): the global batch is split, not repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
from torch import Tensor

from embtie.data import vocab_checks
from embtie.data.files import data_roots
from embtie.data.lm_corpora import Corpus, Vocab, load_corpus_tokens, raw_lines, subword_pieces, text_bytes
from embtie.errors import ConfigError, DataError
from embtie.tasks.lm.config import LMDataConfig


@dataclass
class LMBatch:
    inputs: Tensor
    """(B, T) long token ids."""
    targets: Tensor
    """(B, T) long next-token ids."""


def tokens(corpus: Corpus | str, split: str) -> tuple[str, ...]:
    """The tokens of a split of a corpus (or of a catalogue dataset, by name) under the current data roots
    (cached per roots: changing $EMBTIE_DATA reads again)."""
    corpus = Corpus(corpus) if isinstance(corpus, str) else corpus
    return _tokens_at(tuple(str(r) for r in data_roots()), corpus, split)


@lru_cache(maxsize=8)
def _tokens_at(roots: tuple[str, ...], corpus: Corpus, split: str) -> tuple[str, ...]:
    return tuple(load_corpus_tokens(corpus, split))


def train_vocab(corpus: Corpus | str) -> Vocab:
    """The vocabulary of the training split, ids by decreasing frequency (cached per data roots)."""
    corpus = Corpus(corpus) if isinstance(corpus, str) else corpus
    return _train_vocab_at(tuple(str(r) for r in data_roots()), corpus)


@lru_cache(maxsize=4)
def _train_vocab_at(roots: tuple[str, ...], corpus: Corpus) -> Vocab:
    train = list(_tokens_at(roots, corpus, "train"))
    vocab = Vocab.of_corpus(train, corpus.min_count, corpus.max_vocab, train_unk=corpus.tokenizer == "word")
    vocab = vocab.with_entries(subword_pieces(corpus.tokenizer))
    vocab_checks.say(vocab_checks.size_warning(len(vocab), len(train)))
    return vocab


def text_size(corpus: Corpus, split: str, path: str | Path | None = None) -> tuple[int, int]:
    """(tokens, UTF-8 bytes) of a split of ``corpus`` (or of a user file ``path``): the same text counted
    both ways, the ratio bits per byte convert with (``embtie.data.lm_corpora.text_bytes``)."""
    if path is not None:
        return len(load_corpus_tokens(corpus, split, path)), text_bytes(raw_lines(corpus, split, path))
    return _text_size_at(tuple(str(r) for r in data_roots()), corpus, split)


@lru_cache(maxsize=8)
def _text_size_at(roots: tuple[str, ...], corpus: Corpus, split: str) -> tuple[int, int]:
    return len(_tokens_at(roots, corpus, split)), text_bytes(raw_lines(corpus, split))


def encode(vocab: Vocab, tokens: list[str] | tuple[str, ...]) -> Tensor:
    """(N,) long ids; words outside the vocabulary become <unk>."""
    return vocab.encode(list(tokens))


def batchify(ids: Tensor, streams: int, fix: str = "") -> Tensor:
    """(N,) -> (streams, N // streams): the stream cut into contiguous rows (the tail is dropped); each row
    needs 2 tokens (an input and its target). ``fix`` completes the one-line error (what to change)."""
    n = ids.numel() // streams
    if n < 2:
        raise DataError(f"{ids.numel()} tokens are too few for {streams} streams of at least 2 tokens{fix}")
    return ids[: n * streams].view(streams, n)


class Streams:
    """The training streams of a run and their windows, and the evaluation streams of each split (all
    cut once, on first use)."""

    def __init__(self, data: LMDataConfig, vocab: Vocab, seed: int, corpus: Corpus | None = None) -> None:
        self.data, self.vocab, self.seed = data, vocab, seed
        self.corpus = corpus if corpus is not None else data.corpus()
        """the corpus with its tokenizer resolved (``embtie.data.lm_corpora.subword_corpus``)."""
        self._train: Tensor | None = None
        self._perm: tuple[int, Tensor] | None = None
        self._eval: dict[tuple[str, str | None], Tensor] = {}

    @property
    def train(self) -> Tensor:
        """(B, L) the training streams."""
        if self._train is None:
            toks = tokens(self.corpus, "train")
            ids = encode(self.vocab, toks if self.data.train_tokens is None else toks[: self.data.train_tokens])
            b = self.data.batch_size
            fix = f" (data.batch_size={b}): lower data.batch_size to at most {ids.numel() // 2}, or train on more text"
            self._train = batchify(ids, b, "" if ids.numel() < 2 else fix)
        return self._train

    def steps_per_epoch(self) -> int:
        n = (self.train.shape[1] - 1) // self.data.bptt
        if n < 1:
            raise ConfigError(f"data.bptt={self.data.bptt} is longer than the training streams; lower it")
        return n

    def window(self, epoch: int, index: int) -> int:
        """The window that batch ``index`` of ``epoch`` reads (in order, or a per-epoch permutation)."""
        if not self.data.shuffle:
            return index
        if self._perm is None or self._perm[0] != epoch:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._perm = (epoch, torch.randperm(self.steps_per_epoch(), generator=g))
        return int(self._perm[1][index])

    def batch(self, epoch: int, index: int, rank: int, world_size: int) -> LMBatch:
        """Rank ``rank``'s streams of batch ``index`` of ``epoch`` (on the CPU)."""
        b = self.data.batch_size
        if b % world_size:
            raise ConfigError(f"data.batch_size={b} must be divisible by the {world_size} processes")
        r0, r1 = rank * b // world_size, (rank + 1) * b // world_size
        t = self.data.bptt
        s = self.window(epoch, index) * t
        rows = self.train[r0:r1]
        return LMBatch(rows[:, s : s + t], rows[:, s + 1 : s + 1 + t])

    def evaluation(self, split: str, path: str | Path | None = None) -> Tensor:
        """(eval_batch_size, L) the streams of a split (or of a user file)."""
        key = (split, None if path is None else str(path))
        if key not in self._eval:
            d = self.data
            toks = load_corpus_tokens(self.corpus, split, path) if path is not None else tokens(self.corpus, split)
            ids = encode(self.vocab, toks)
            outside = sum(1 for t in toks if t not in self.vocab.stoi)
            vocab_checks.say(vocab_checks.oov_warning(split, outside, len(toks), self.vocab.unk_count() > 0))
            if split == "valid" and path is None and d.valid_tokens is not None:
                ids = ids[: d.valid_tokens]
            # short files get fewer streams, so that they keep most of their tokens
            streams = max(1, min(d.eval_batch_size, ids.numel() // (d.bptt + 1)))
            where = f" in the {split} text" + (f" ({path})" if path is not None else "")
            fix = f"{where}: an evaluation needs at least 2 tokens; give it more text"
            self._eval[key] = batchify(ids, streams, fix)
        return self._eval[key]
