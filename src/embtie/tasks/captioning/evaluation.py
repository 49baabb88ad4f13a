"""How a captioning model is evaluated: teacher-forced loss, decoding images into captions, scores.

- Loss: cross-entropy per reference word (and </s>) over every (image, caption) pair, teacher forcing.
- Decoding: each image once, beam search (``embtie.evaluation.beam_search``) over the captioner bound
  to its features; at most ``data.max_len`` words.
- Scores: BLEU-1..4, METEOR, ROUGE-L, CIDEr (``embtie.evaluation.caption_scores``), vocabulary usage
  (distinct words, <unk> left out), rare-word share, <unk> share, mean length.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from embtie.data.caption_batches import CaptionPairs, make_caption_batch
from embtie.data.subwords import PAD
from embtie.data.word_vocab import WordVocab
from embtie.evaluation.beam_search import translate_ids
from embtie.evaluation.caption_scores import coco_scores
from embtie.evaluation.loss_meter import LossMeter
from embtie.evaluation.vocab_usage import UNK, vocabulary_usage
from embtie.models.captioner import Captioner
from embtie.runtime import autocast
from embtie.tasks.captioning.config import CaptionDataConfig


@torch.no_grad()
def teacher_forced_loss(
    model: Captioner, feats: Tensor, pairs: CaptionPairs, eval_batch: int, precision: str,
    max_batches: int | None = None,
) -> LossMeter:  # fmt: skip
    """Cross-entropy over every reference word (and </s>) of ``pairs``, in length-sorted batches of
    ``eval_batch`` pairs; the model's train/eval mode is restored after."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    meter = LossMeter()
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs.ids[i]), i))
    try:
        for n, start in enumerate(range(0, len(order), eval_batch)):
            if max_batches is not None and n >= max_batches:
                break
            b = make_caption_batch(feats, pairs, order[start : start + eval_batch]).to(device)
            with autocast(device, precision):
                h, _ = model(b.feats, b.tgt_in)
                ce = model.sharing.loss(h, b.tgt_out, ignore_index=PAD)
            meter.add(ce, b.num_target_tokens)
    finally:
        model.train(was_training)
    return meter


@torch.no_grad()
def caption(
    model: Captioner, feats: Tensor, vocab: WordVocab, d: CaptionDataConfig, precision: str, *,
    beam: int | None = None, lenpen: float | None = None,
) -> list[str]:  # fmt: skip
    """Captions (space-joined words) of images with features ``feats`` (N, C) or (N, L, C); beam and
    lenpen default to the run's."""
    beam = d.beam if beam is None else beam
    lenpen = d.lenpen if lenpen is None else lenpen
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out: list[str] = []
    step = max(1, d.eval_batch // max(beam, 1))
    try:
        for i in range(0, feats.shape[0], step):
            f = feats[i : i + step].to(device).float()
            src = torch.zeros((f.shape[0], 1), dtype=torch.long, device=device)
            with autocast(device, precision):
                ids = translate_ids(model.bind(f), src, beam=beam, lenpen=lenpen, max_len_ratio=0.0,
                                    max_len_extra=d.max_len)  # fmt: skip
            out.extend(vocab.decode(t) for t in ids)
    finally:
        model.train(was_training)
    return out


def caption_scores(
    hyps: list[str], refs: list[list[str]], vocab: WordVocab, rare_max: int, metrics: tuple[str, ...]
) -> dict[str, Any]:
    """COCO metrics x100 of ``hyps`` against ``refs``, vocabulary usage (distinct words, <unk> left out),
    rare types and their token share, <unk> share and mean length."""
    words = [[w for w in h.split() if w != UNK] for h in hyps]
    n_words = sum(len(h.split()) for h in hyps)
    vu = vocabulary_usage(words, dict(zip(vocab.words, vocab.counts)), rare_max)
    return {**coco_scores(hyps, refs, metrics), "vocab_usage": vu["vu"], "rare_types": vu["types_rare"],
            "rare_token_share": vu["rare_token_share"], "rare_max": rare_max,
            "unk_share": (n_words - vu["tokens"]) / n_words if n_words else 0.0,
            "mean_length": n_words / max(len(hyps), 1)}  # fmt: skip


def result_header(split: str, captions_file: str | Path | None, images: int, beam: int) -> dict[str, Any]:
    """What a captioning evaluation scored: the split, its captions file, the images and the beam."""
    return {"split": split, "captions_file": None if captions_file is None else str(captions_file),
            "images": images, "beam": beam}  # fmt: skip
