"""Captioning diagnostics of one run (Shalev et al., Table 1): the validation images captioned once
(beam ``data.beam``), COCO scores, vocabulary usage and rare words, and the per-image arrays behind the
comparison's paired tests: sacreBLEU statistics of each caption against its references (BLEU-4 over
images) and the incidence of each vocabulary word in each caption (VU over images)."""

from __future__ import annotations

import shutil
from typing import Any

from torch import nn

from embtie import stats
from embtie.analysis.records import CaptionExamples, CaptioningQuality, CaptionScores, QualityArrays, VocabularyUsage
from embtie.evaluation.vocab_usage import UNK, vocabulary_usage, word_incidence


def diagnose_captioning(task: Any, model: nn.Module) -> tuple[CaptioningQuality, QualityArrays]:
    """The validation images captioned and scored: BLEU-1..4, METEOR (when Java is there), ROUGE-L, CIDEr
    x100, vocabulary usage of the captions and of the references, every image's caption; and per image
    the sacreBLEU statistics and the incidence of each vocabulary word."""
    metrics = ("bleu", "meteor", "rouge_l", "cider") if shutil.which("java") else ("bleu", "rouge_l", "cider")
    res = task.evaluate_captions(model, "valid", metrics=metrics)
    names, refs = task.references("valid")
    hyps: list[str] = res["hyps"]
    train_counts = dict(zip(task.vocab.words, task.vocab.counts))
    rare_max = task.data.rare_max
    ref_words = [[w for w in r.split() if w != UNK] for rs in refs for r in rs]
    hyp_words = [[w for w in h.split() if w != UNK] for h in hyps]
    quality = CaptioningQuality(
        scores=CaptionScores.from_json(
            {k: v for k, v in res.items() if k.startswith("bleu") or k in ("meteor", "rouge_l", "cider")}
        ),
        beam=res["beam"],
        images=len(names),
        mean_length=res["mean_length"],
        unk_share=res["unk_share"],
        vocab_usage=VocabularyUsage.from_json(vocabulary_usage(hyp_words, train_counts, rare_max)),
        reference_vocab_usage=VocabularyUsage.from_json(vocabulary_usage(ref_words, train_counts, rare_max)),
        examples=CaptionExamples(names=list(names), hyps=list(hyps)),
    )
    arrays = QualityArrays(
        bleu_stats=stats.multi_reference_bleu_stats(hyps, refs),
        word_incidence=word_incidence(hyp_words, list(task.vocab.words)),
    )
    return quality, arrays
