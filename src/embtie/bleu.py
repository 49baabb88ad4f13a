"""Corpus BLEU and chrF of detokenized, cased translations, computed by sacreBLEU (with signatures)."""

from __future__ import annotations

from typing import Any

from sacrebleu.metrics import BLEU, CHRF

from embtie.errors import DataError


def corpus_scores(hyps: list[str], refs: list[str]) -> dict[str, Any]:
    """sacreBLEU (default 13a tokenization, mixed case) and chrF2 of ``hyps`` against one reference each.

    Returns {"bleu", "chrf", "bleu_signature", "chrf_signature", "bleu_detail", "sentences"}.
    """
    if len(hyps) != len(refs):
        raise DataError(f"{len(hyps)} translations but {len(refs)} references; give line-aligned files")
    if not hyps:
        raise DataError("no sentences to score")
    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hyps, [refs])
    c = chrf.corpus_score(hyps, [refs])
    return {
        "bleu": b.score,
        "chrf": c.score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "bleu_detail": str(b),
        "sentences": len(hyps),
    }
