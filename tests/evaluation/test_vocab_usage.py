"""Vocabulary usage of translations: `<unk>` is one token and no word, and the per-sentence word incidence
that the VU bootstrap resamples adds up to the distinct words used."""

from __future__ import annotations

import numpy as np

from embtie import stats
from embtie.analysis.translation_diag import UNK, word_incidence, words
from embtie.evaluation.vocab_usage import vocabulary_usage


def test_unk_stays_one_token() -> None:
    assert words("A man in a <unk> shirt .") == ["a", "man", "in", "a", UNK, "shirt", "."]
    assert words("<unk> <unk>, ok") == [UNK, UNK, ",", "ok"]
    assert words("Two dogs!") == ["two", "dogs", "!"]  # 13a as before when there is no <unk>


def test_incidence_counts_distinct_words_of_the_list() -> None:
    hyps = [["a", "dog", "runs"], ["a", "cat"], ["zebra", "a"]]
    vocab = sorted({"a", "cat", "dog", "runs", "the"})
    inc = word_incidence(hyps, vocab)
    assert inc.shape == (3, 5) and inc.dtype == np.uint8
    assert inc[0].tolist() == [1, 0, 1, 1, 0]  # a, cat, dog, runs, the
    # distinct words of the list that were used; "zebra" is outside the list
    assert int((inc.sum(0) > 0).sum()) == 4
    assert vocabulary_usage(hyps, dict.fromkeys(vocab, 100))["vu"] == 5


def test_vu_bootstrap_sees_one_more_word_per_sentence() -> None:
    """A system that adds one new word to every sentence uses N more distinct words: the bias-corrected
    bootstrap interval holds that difference and the test calls it significant."""
    rng = np.random.default_rng(0)
    n, w = 200, 600
    base = (rng.random((n, w)) < 0.002).astype(np.uint8)
    base[:, 400:] = 0
    more = base.copy()
    more[np.arange(n), 400 + np.arange(n)] = 1
    t = stats.vocab_usage_bootstrap(more[None], base[None])
    observed = int((more.sum(0) > 0).sum() - (base.sum(0) > 0).sum())
    assert observed == n
    lo, hi = t["delta_ci"]
    assert t["delta"] == observed and lo <= observed <= hi and t["p_value"] < 0.05


def test_word_similarity_only_for_english_word_targets() -> None:
    """Table 4 needs English words: a word-level De->En task gets it, En->De and subword tasks do not."""
    from types import SimpleNamespace

    from embtie.data.word_vocab import WordVocab
    from embtie.tasks.translation import TranslationTask

    def english_words(tgt_sw, lang):
        return TranslationTask.english_words(SimpleNamespace(tgt_sw=tgt_sw, data=SimpleNamespace(tgt_lang=lang)))

    vocab = WordVocab(["dog", "cat"], [5, 3])
    assert english_words(vocab, "en") == vocab.stoi
    assert english_words(vocab, "de") is None
    assert english_words(object(), "en") is None
