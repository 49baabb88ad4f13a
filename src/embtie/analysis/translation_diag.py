"""Translation diagnostics of one run: decoded hypotheses scored sentence by sentence (sacreBLEU's
sufficient statistics, for the paired bootstrap) and vocabulary usage against the training targets
(Shalev et al., Table 1 "VU" and rare words)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from torch import nn

from embtie import stats
from embtie.analysis.records import QualityArrays, TranslationQuality, TranslationScores, VocabularyUsage
from embtie.evaluation.vocab_usage import UNK, vocabulary_usage, word_incidence

RARE_MAX = 10
"""a word is rare when it occurs at most this often in the training targets."""


_TOK13A = Tokenizer13a()


def words(text: str) -> list[str]:
    """Lower-cased words of a sentence (sacreBLEU's 13a tokenization); ``<unk>`` stays one token (13a
    would split it into '<', 'unk', '>', three rare "words")."""
    out: list[str] = []
    for i, part in enumerate(text.lower().split(UNK)):
        if i:
            out.append(UNK)
        out.extend(_TOK13A(part).split())
    return out


def _known(ws: list[str]) -> list[str]:
    """The words of ``ws`` without ``<unk>``."""
    return [w for w in ws if w != UNK]


def train_targets(task: Any) -> list[str]:
    return task.texts(task.data.train_split).ref or []


def diagnose_translation(task: Any, model: nn.Module) -> tuple[TranslationQuality, QualityArrays]:
    """The validation split decoded and scored: corpus BLEU/chrF (detokenized ``bleu`` and tokenized
    ``bleu_tok``, with signatures), vocabulary usage of the hypotheses and of the references, the share of
    output words that are ``<unk>``; and per sentence the sacreBLEU statistics and the incidence of the
    training-target words. Vocabulary usage leaves ``<unk>`` out."""
    res = task.evaluate_translation(model, "valid")
    hyps = res.pop("hyps")
    refs = task.texts("valid").ref
    train_refs = train_targets(task)
    train_counts = Counter(w for r in train_refs for w in _known(words(r)))
    hyp_all = [words(h) for h in hyps]
    hyp_words = [_known(h) for h in hyp_all]
    n_words = sum(map(len, hyp_all))
    n_unk = n_words - sum(map(len, hyp_words))
    quality = TranslationQuality(
        scores=TranslationScores.from_json({k: v for k, v in res.items() if isinstance(v, int | float | str)}),
        vocab_usage=VocabularyUsage.from_json(vocabulary_usage(hyp_words, train_counts, RARE_MAX)),
        reference_vocab_usage=VocabularyUsage.from_json(
            vocabulary_usage([_known(words(r)) for r in refs], train_counts, RARE_MAX)
        ),
        unk_share=n_unk / n_words if n_words else 0.0,
    )
    arrays = QualityArrays(
        bleu_stats=stats.bleu_sentence_stats(hyps, refs),
        word_incidence=word_incidence(hyp_words, sorted(train_counts)),
    )
    return quality, arrays
