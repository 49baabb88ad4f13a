"""Word-level vocabularies of a language model that make sense on raw text: ``data.min_count`` and
``data.max_vocab`` (PTB-style ``<unk>``, always trained), ``data.normalize``, the one-line warnings, and the
catalogue's corpora unchanged."""

from __future__ import annotations

from collections import Counter

import pytest

from embtie.config import load_config
from embtie.data import vocab_checks
from embtie.data.lm_corpora import EOS, UNK, Vocab, load_corpus_tokens
from embtie.data.normalize import normalize_line
from embtie.tasks.lm.config import OWN_WORDS_MAX_VOCAB
from embtie.tasks.lm.streams import Streams, train_vocab
from raw_corpus import raw_corpus


def _data(files, *overrides: str):
    cfg = load_config("ptb-gpt-tiny", [*(f"data.{s}_file={p}" for s, p in files.items()), *overrides])
    return cfg.data


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return raw_corpus(tmp_path_factory.mktemp("raw"))


def test_the_default_word_vocabulary_of_raw_text_is_capped_and_its_unk_trained(files):
    data = _data(files, "data.tokenizer=word")
    corpus = data.corpus()
    train = load_corpus_tokens(corpus, "train")
    counts = Counter(train)
    assert "Two" in counts and "two" in counts and "bushes." in counts  # raw: case and punctuation kept
    vocab = train_vocab(corpus)
    assert len(vocab) <= OWN_WORDS_MAX_VOCAB
    kept = [w for w in vocab.itos if w != UNK]
    assert min(counts[w] for w in kept if w != EOS) >= 2  # singletons go to <unk> (min_count 2)
    assert vocab.unk_count() == sum(c for w, c in counts.items() if w not in vocab.stoi) > 0
    assert vocab.counts == sorted(vocab.counts, reverse=True)  # ids by decreasing training count
    small = train_vocab(_data(files, "data.tokenizer=word", "data.max_vocab=300").corpus())
    assert len(small) == 300 and small.unk_count() > 0 and EOS in small.stoi


def test_unk_is_trained_even_when_every_word_is_kept():
    tokens = ["a", "b", "a", "c", "<eos>", "a", "b", "c", "d", "<eos>", "d", "d"]  # every word twice or more
    v = Vocab.of_corpus(tokens, min_count=1, train_unk=True)
    # the rarest words (b and c, twice each) become <unk>; <eos> stays whatever its count
    assert v.itos == ["<unk>", "a", "d", "<eos>"] and v.counts == [4, 3, 3, 2]
    assert Vocab.of_corpus(tokens, min_count=1).unk_count() == 0  # without train_unk (subwords): untouched


def test_ptb_style_normalization_merges_case_punctuation_and_numbers(files):
    line = 'Two young, White males are near 3,000 bushes. It\'s "fine"!'
    assert normalize_line(line, "ptb") == 'two young , white males are near N bushes . it\'s " fine " !'
    assert normalize_line(line, "lower") == line.lower() and normalize_line(line, "none") == line
    raw = train_vocab(_data(files, "data.tokenizer=word", "data.min_count=1", "data.max_vocab=100000").corpus())
    ptb = train_vocab(_data(files, "data.tokenizer=word", "data.min_count=1", "data.max_vocab=100000",
                            "data.normalize=ptb").corpus())  # fmt: skip
    assert "two" in ptb.stoi and "Two" not in ptb.stoi and "," in ptb.stoi and "bushes." not in ptb.stoi
    assert len(ptb) < len(raw) and ptb.counts[ptb.stoi["two"]] > raw.counts[raw.stoi["two"]]


def test_the_warnings_are_one_line_with_the_figures(files, capsys):
    assert vocab_checks.oov_warning("valid", 104, 1000, unk_trained=True) == (
        "embtie: warning: 10.4% of the valid tokens (104 of 1,000) are <unk> (outside the vocabulary; more than "
        "5%): their perplexity says little; use " + vocab_checks.FIX
    )
    assert vocab_checks.oov_warning("valid", 40, 1000, unk_trained=True) is None
    assert "fall on an <unk> row that training never saw" in str(vocab_checks.oov_warning("test", 2, 1000, False))
    assert vocab_checks.oov_warning("test", 1, 10000, unk_trained=False) is None  # one stray character
    assert vocab_checks.size_warning(60938, 500000) is not None and vocab_checks.size_warning(10000, 929589) is None
    data = _data(files, "data.tokenizer=word", "data.max_vocab=50", "data.batch_size=4", "data.bptt=16")
    vocab = train_vocab(data.corpus())
    capsys.readouterr()
    Streams(data, vocab, 0).evaluation("valid")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("embtie: warning: ") and "of the valid tokens" in err[0]


def test_the_catalogue_corpora_keep_their_vocabulary():
    vocab = train_vocab(load_config("ptb-gpt-tiny").data.corpus())
    plain = Vocab.from_tokens(load_corpus_tokens(load_config("ptb-gpt-tiny").data.corpus(), "train"))
    assert vocab.itos == plain.itos and vocab.counts == plain.counts and len(vocab) == 10000
