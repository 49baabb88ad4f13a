"""The text, vocabularies and batches of a translation run.

- Subwords: one joint BPE model trained on both sides of the training split (``data.vocab: joint``;
  the encoder input, decoder input and decoder output can then be one sharing object), or one per
  language (``separate``; the encoder gets its own ``PlainEmbedding``, only the decoder shares).
  Models are cached (``embtie.data.subwords``) and copied into the run directory.
- Words instead (``data.tokenizer: word``, Shalev et al.): the tokenized lowercased text of the split,
  words seen at least ``data.min_count`` times in training, the rest <unk> (``embtie.data.word_vocab``).
- Batches: length-bucketed by token count (``data.max_tokens`` padded tokens of the longer side per
  global batch) or by sentences (``data.batch_sentences`` pairs), one partition per epoch drawn and
  ordered with (seed, epoch), so the loop's (epoch, index) is the whole data position.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import torch

from embtie.data.files import data_roots, verify
from embtie.data.pair_batches import BucketedPairs, PairBatch, make_batch
from embtie.data.parallel_corpora import ParallelText, check_pair, load_parallel, load_user_files, split_files
from embtie.data.subwords import MAX_VOCAB_SIZE, SPECIAL_IDS, Subwords, required_vocab_size
from embtie.data.vocabs import VOCAB_FILES, learn_vocabs, load_vocabs, save_vocab
from embtie.data.word_vocab import WordVocab
from embtie.errors import ConfigError, DataError
from embtie.tasks.translation.config import MTDataConfig

Vocab = Subwords | WordVocab
EncodedPairs = tuple[list[list[int]], list[list[int]]]
"""(source ids, target ids) of each sentence pair."""


def parallel(dataset: str, split: str, src: str, tgt: str, tokenized: bool = False) -> ParallelText:
    """A split under the current data root (cached per root: changing $EMBTIE_DATA reads again)."""
    return _parallel_at(tuple(str(r) for r in data_roots()), dataset, split, src, tgt, tokenized)


@lru_cache(maxsize=8)
def _parallel_at(roots: tuple[str, ...], dataset: str, split: str, src: str, tgt: str, tokenized: bool) -> ParallelText:
    return load_parallel(dataset, split, src, tgt, tokenized=tokenized)


def check_data(d: MTDataConfig) -> None:
    """The user's training files are readable and the dataset's files are there and intact."""
    splits = []
    train = (d.train_src_file, d.train_tgt_file) if d.train_src_file is not None else None
    for split, key, own in ((d.train_split, "train", train), (d.valid_split, "valid", d.own_files(d.valid_split))):
        if own is not None:
            load_user_files(own[0], own[1], f"data.{key}_src_file", f"data.{key}_tgt_file")
        else:
            splits.append(split)
    check_pair(d.dataset, d.src_lang, d.tgt_lang)
    for split in splits:
        for f in split_files(d.dataset, split, d.tokenizer == "word").values():
            verify(f.path(), f.sha256)
    check_vocab_size(d)


def check_vocab_size(d: MTDataConfig) -> None:
    """``data.vocab_size`` leaves a subword piece for every distinct character of the training text (which
    SentencePiece needs); a ConfigError with the valid range otherwise. Word vocabularies have no size."""
    if d.tokenizer != "bpe":
        return
    pt = train_text(d)
    texts = [pt.src + (pt.ref or [])] if d.vocab == "joint" else [pt.src, pt.ref or []]
    need = max(required_vocab_size(t) for t in texts)
    if d.vocab_size < need:
        raise ConfigError(
            f"data.vocab_size={d.vocab_size} must be in [{need}, {MAX_VOCAB_SIZE}] for this training text: its "
            f"subword model needs one piece for each of its {need - SPECIAL_IDS} distinct characters and "
            f"{SPECIAL_IDS} special ids"
        )


def train_text(d: MTDataConfig) -> ParallelText:
    """The training pairs: the user's files or the dataset's train split, cut to ``train_pairs``."""
    if d.train_src_file is not None:
        pt = load_user_files(d.train_src_file, d.train_tgt_file)
    else:
        pt = parallel(d.dataset, d.train_split, d.src_lang, d.tgt_lang, d.tokenizer == "word")
    if d.train_pairs is not None:
        pt = ParallelText(pt.src[: d.train_pairs], pt.ref[: d.train_pairs] if pt.ref else None)
    return pt


def split_text(
    d: MTDataConfig, split: str = "valid", src_file: str | Path | None = None, ref_file: str | Path | None = None
) -> ParallelText:
    """The pairs of a split of the configured dataset (the validation split cut to ``valid_pairs``), or
    of user files."""
    if src_file is not None:
        return load_user_files(src_file, ref_file)
    own = d.own_files(split)
    if own is not None:
        pt = load_user_files(*own)
    else:
        pt = parallel(d.dataset, split, d.src_lang, d.tgt_lang, d.tokenizer == "word")
    if split == d.valid_split and d.valid_pairs is not None:
        pt = ParallelText(pt.src[: d.valid_pairs], pt.ref[: d.valid_pairs] if pt.ref else None)
    return pt


def learn_vocabularies(d: MTDataConfig) -> tuple[Vocab, Vocab]:
    """(source, target) vocabularies learned on the training text; one object twice when joint."""
    pt = train_text(d)
    assert pt.ref is not None
    vocabs: tuple[Vocab, Vocab] = learn_vocabs(
        d.tokenizer, pt.src, pt.ref, joint=d.vocab == "joint", vocab_size=d.vocab_size, min_count=d.min_count
    )
    return vocabs


def save_vocabularies(d: MTDataConfig, run_dir: Path, src: Vocab, tgt: Vocab) -> None:
    """Copy the vocabularies into ``run_dir`` (files already there are kept) and say which they are."""
    joint = src is tgt
    names = VOCAB_FILES[d.tokenizer]["joint" if joint else "separate"]
    vocabs = (tgt,) if joint else (src, tgt)
    for name, vocab in zip(names, vocabs):
        dst = Path(run_dir) / name
        if not dst.is_file():
            save_vocab(vocab, dst)
    kind = {"tokenizer": d.tokenizer, "vocab": "joint" if joint else "separate"}
    (Path(run_dir) / "subwords.json").write_text(json.dumps({**kind, "files": list(names)}), encoding="utf-8")


def load_vocabularies(d: MTDataConfig, run_dir: Path) -> tuple[Vocab, Vocab] | None:
    """The vocabularies saved in ``run_dir``; None when the run directory lacks them."""
    vocabs: tuple[Vocab, Vocab] | None = load_vocabs(d.tokenizer, d.vocab, Path(run_dir))
    return vocabs


class TrainingBatches:
    """The training pairs, encoded and length-bucketed once, and the batches of each epoch."""

    def __init__(self, d: MTDataConfig, seed: int, src: Vocab, tgt: Vocab) -> None:
        self.d, self.seed, self.src_vocab, self.tgt_vocab = d, seed, src, tgt
        self._pairs: BucketedPairs | None = None
        self._epoch: tuple[int, list[list[int]]] | None = None

    @property
    def pairs(self) -> BucketedPairs:
        if self._pairs is None:
            pt = train_text(self.d)
            assert pt.ref is not None
            src = self.src_vocab.encode_batch(pt.src)
            tgt = self.tgt_vocab.encode_batch(pt.ref)
            d = self.d
            self._pairs = BucketedPairs(src, tgt, d.max_tokens, max_len=d.max_len, max_sentences=d.batch_sentences)
            if len(self._pairs) == 0:
                raise DataError(f"no training pair is shorter than data.max_len={d.max_len}; raise it")
        return self._pairs

    def steps_per_epoch(self) -> int:
        return len(self.pairs.batches(None))  # the partition's size does not depend on the shuffle

    def _batches_of_epoch(self, epoch: int) -> list[list[int]]:
        if self._epoch is None or self._epoch[0] != epoch:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._epoch = (epoch, self.pairs.batches(g))
        return self._epoch[1]

    def batch(self, epoch: int, index: int, rank: int, world_size: int) -> PairBatch:
        """Rank ``rank``'s share of batch ``index`` of ``epoch`` (on the CPU)."""
        idx = self._batches_of_epoch(epoch)[index]
        mine = idx[rank::world_size] or idx[-1:]
        data = self.pairs
        return make_batch([data.src[i] for i in mine], [data.tgt[i] for i in mine], mine)


class EncodedSplits:
    """The evaluation pairs of each split (or user files) encoded once."""

    def __init__(self, src: Vocab, tgt: Vocab) -> None:
        self.src_vocab, self.tgt_vocab = src, tgt
        self._cache: dict[tuple[str, ...], EncodedPairs] = {}

    def encoded(self, texts: ParallelText, key: tuple[str, ...]) -> EncodedPairs:
        if key not in self._cache:
            if texts.ref is None:
                raise DataError("perplexity needs references; give --ref-file with --src-file")
            self._cache[key] = (self.src_vocab.encode_batch(texts.src), self.tgt_vocab.encode_batch(texts.ref))
        return self._cache[key]
