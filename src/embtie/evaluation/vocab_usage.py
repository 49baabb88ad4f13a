"""Vocabulary usage of generated text (Shalev et al., Table 1 "VU", and their rare-word observation)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

UNK = "<unk>"
"""the unknown word of word vocabularies: a token, never a word (left out of VU and of word incidences)."""


def vocabulary_usage(hypotheses: Iterable[list[str]], train_counts: Mapping[str, int], rare_max: int = 10) -> dict:
    """Diversity statistics of tokenised hypotheses.

    hypotheses: one token list per generated sentence. train_counts: token -> training-set frequency.
    A token is *rare* when its training frequency is <= ``rare_max`` (unseen tokens count as rare).

    Returns {"vu": distinct token types used (Shalev's VU), "tokens": total tokens, "types_rare": distinct
    rare types used, "rare_token_share": share of hypothesis tokens that are rare, "type_token_ratio"}.
    """
    used: Counter[str] = Counter()
    for hyp in hypotheses:
        used.update(hyp)
    tokens = sum(used.values())
    rare_types = [w for w in used if train_counts.get(w, 0) <= rare_max]
    rare_tokens = sum(used[w] for w in rare_types)
    return {
        "vu": len(used),
        "tokens": tokens,
        "types_rare": len(rare_types),
        "rare_token_share": rare_tokens / tokens if tokens else 0.0,
        "type_token_ratio": len(used) / tokens if tokens else 0.0,
        "rare_max": rare_max,
    }


def word_incidence(sentences: Sequence[Sequence[str]], vocabulary: Sequence[str]) -> np.ndarray:
    """(N, W) uint8: 1 where word ``vocabulary[j]`` occurs in sentence i (the per-unit statistic that the VU
    bootstrap resamples). ``<unk>`` and words outside ``vocabulary`` are left out; give every run of a
    comparison the same list so that the columns pair up."""
    index = {w: j for j, w in enumerate(vocabulary) if w != UNK}
    out = np.zeros((len(sentences), len(vocabulary)), dtype=np.uint8)
    for i, sentence in enumerate(sentences):
        out[i, [index[w] for w in sentence if w in index]] = 1
    return out
