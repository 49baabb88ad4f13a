"""What a language-model comparison trains on, in words, for its report's title and Summary: the corpus
(the user's file names, or the dataset), the tokenizer and the vocabulary."""

from __future__ import annotations

from pathlib import Path

from embtie.config import RunConfig


def data_title(cfg: RunConfig, vocab_size: int) -> str | None:
    """``my-corpus/train.txt, BPE 2,000 pieces, V = 2,000`` for a run on the user's text or with a
    tokenizer other than words; None for a catalogue dataset cut into its own words (the preset's name
    says it all, and reports of such comparisons keep their title)."""
    if cfg.task != "lm":
        return None
    corpus = cfg.data.corpus()
    if not corpus.own and corpus.tokenizer == "word" and corpus.normalize == "none":
        return None
    where = _where(corpus.source, corpus.train_file, corpus.dataset)
    return f"{where}, {_tokenizer(corpus.tokenizer, corpus.vocab_size, corpus.normalize)}, V = {vocab_size:,}"


def _where(source: str | None, train_file: str | None, dataset: str) -> str:
    if train_file is not None:
        p = Path(train_file)
        return f"{p.parent.name}/{p.name}" if p.parent.name else p.name
    return source if source is not None else dataset


def _tokenizer(tokenizer: str, vocab_size: int, normalize: str) -> str:
    norm = "" if normalize == "none" else f" ({normalize}-normalized)"
    if tokenizer in ("bpe", "unigram"):
        return f"{'BPE' if tokenizer == 'bpe' else 'unigram'} subwords of {vocab_size:,} pieces{norm}"
    if tokenizer == "word":
        return f"words{norm}"
    kind, _, where = tokenizer.partition(":")
    return f"{'SentencePiece' if kind == 'sentencepiece' else 'Hugging Face'} tokenizer {Path(where).name}{norm}"
