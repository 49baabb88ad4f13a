"""Translation diagnostics of one run: decoded hypotheses scored sentence by sentence (sacreBLEU's
sufficient statistics, for the paired bootstrap), vocabulary usage against the training targets
(Shalev et al., Table 1 "VU" and rare words), and target-subword training counts (for norm vs frequency)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from torch import nn

from embtie import stats
from embtie.analysis.vocab_usage import vocabulary_usage

RARE_MAX = 10
"""a word is rare when it occurs at most this often in the training targets."""


_TOK13A = Tokenizer13a()


def words(text: str) -> list[str]:
    """Lower-cased words of a detokenized sentence (sacreBLEU's 13a tokenization)."""
    return _TOK13A(text.lower()).split()


def train_targets(task: Any) -> list[str]:
    return task.texts(task.data.train_split).ref or []


def target_subword_counts(task: Any, refs: list[str], vocab_size: int) -> np.ndarray:
    """(V,) how often each target subword id occurs in the training targets."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for ids in task.tgt_sw.encode_batch(refs):
        np.add.at(counts, np.asarray(ids, dtype=np.int64), 1)
    return counts


def diagnose_translation(task: Any, model: nn.Module) -> tuple[dict, dict]:
    """({"scores": corpus BLEU/chrF (detokenized ``bleu`` and tokenized ``bleu_tok``, with signatures)...,
    "vocab_usage": ..., "reference_vocab_usage": ...},
    {"bleu_stats": (N, k), "counts": (V,)}) on the validation split."""
    res = task.evaluate_translation(model, "valid")
    hyps = res.pop("hyps")
    refs = task.texts("valid").ref
    train_refs = train_targets(task)
    train_counts = Counter(w for r in train_refs for w in words(r))
    diag = {
        "scores": {k: v for k, v in res.items() if isinstance(v, int | float | str)},
        "vocab_usage": vocabulary_usage([words(h) for h in hyps], train_counts, RARE_MAX),
        "reference_vocab_usage": vocabulary_usage([words(r) for r in refs], train_counts, RARE_MAX),
    }
    arrays = {
        "bleu_stats": stats.bleu_sentence_stats(hyps, refs),
        "counts": target_subword_counts(task, train_refs, model.sharing.vocab_size),
    }
    return diag, arrays
