"""How a translation model is evaluated: teacher-forced loss, decoding, and how references are scored.

- Loss: validation loss/perplexity is the plain (unsmoothed) cross-entropy over reference tokens.
- Decoding: greedy or beam search (``embtie.evaluation.beam_search``), batched by source length and
  detokenized by the target vocabulary (SentencePiece, or space-joined words).
- Scores (``embtie.evaluation.bleu``): sacreBLEU and chrF on the detokenized, cased output, and BLEU
  on tokenized text; ``references_tokenized`` says whether the references are tokenized already.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from embtie import progress
from embtie.data.pair_batches import make_batch, source_tensor, token_batches
from embtie.data.subwords import PAD
from embtie.errors import ConfigError
from embtie.evaluation.beam_search import translate_ids
from embtie.evaluation.loss_meter import LossMeter
from embtie.models.seq2seq import Seq2Seq
from embtie.runtime import autocast
from embtie.tasks.translation.config import MTDataConfig
from embtie.tasks.translation.inputs import EncodedPairs, Vocab

PRETOKENIZED_DATASETS = frozenset({"iwslt14", "wmt16", "wmt14"})
"""datasets whose shipped text is already Moses-tokenized (``embtie.data.parallel_corpora``): their tokenized BLEU
splits hypotheses and references on whitespace instead of tokenizing them again."""


@torch.no_grad()
def teacher_forced_loss(
    model: Seq2Seq, pairs: EncodedPairs, max_tokens: int, precision: str, max_batches: int | None = None
) -> LossMeter:
    """Cross-entropy (no label smoothing) over the reference tokens of ``pairs``, in length-sorted batches
    of at most ``max_tokens`` padded tokens; the model's train/eval mode is restored after."""
    src, tgt = pairs
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    meter = LossMeter()
    order = sorted(range(len(src)), key=lambda i: (max(len(src[i]), len(tgt[i])), i))
    lengths = [max(len(s), len(t)) + 1 for s, t in zip(src, tgt)]
    try:
        for n, idx in enumerate(token_batches(lengths, max_tokens, order)):
            if max_batches is not None and n >= max_batches:
                break
            b = make_batch([src[i] for i in idx], [tgt[i] for i in idx], idx).to(device)
            with autocast(device, precision):
                h = model(b.src, b.tgt_in)
                ce = model.sharing.loss(h, b.tgt_out, ignore_index=PAD)
            meter.add(ce, b.num_target_tokens)
    finally:
        model.train(was_training)
    return meter


@torch.no_grad()
def translate(
    model: Seq2Seq,
    sentences: list[str],
    vocabs: tuple[Vocab, Vocab],
    d: MTDataConfig,
    precision: str,
    *,
    beam: int | None = None,
    lenpen: float | None = None,
    max_tokens: int | None = None,
) -> list[str]:
    """Detokenized translations of ``sentences`` (batched by length, returned in input order); an empty
    (or blank) sentence translates to an empty line, so outputs stay line-aligned with the input.
    ``vocabs``: (source, target); beam and lenpen default to the run's."""
    src_vocab, tgt_vocab = vocabs
    beam = d.beam if beam is None else beam
    lenpen = d.lenpen if lenpen is None else lenpen
    if beam < 1:
        raise ConfigError(f"--beam {beam} must be >= 1")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    ids = src_vocab.encode_batch(sentences)
    budget = max_tokens or max(d.eval_max_tokens // max(beam, 1), 64)
    order = sorted((i for i in range(len(ids)) if ids[i]), key=lambda i: (len(ids[i]), i))
    out: list[str] = [""] * len(ids)
    bar = progress.bar(total=len(order), desc=f"beam {beam}", unit="sent")
    try:
        for idx in token_batches([len(s) + 1 for s in ids], budget, order):
            bar.update(len(idx))
            src = source_tensor([ids[i] for i in idx]).to(device)
            with autocast(device, precision):
                hyps = translate_ids(
                    model, src, beam=beam, lenpen=lenpen, max_len_ratio=d.max_len_ratio,
                    max_len_extra=d.max_len_extra,
                )  # fmt: skip
            for i, h in zip(idx, hyps):
                out[i] = tgt_vocab.decode(h)
    finally:
        bar.close()
        model.train(was_training)
    return out


def references_tokenized(d: MTDataConfig, src_file: str | Path | None, given: bool | None) -> bool:
    """Whether the references being scored are tokenized already: ``given`` when the user said so, else
    True for the splits of ``PRETOKENIZED_DATASETS`` and of word-level runs, False for user files."""
    if given is not None:
        return given
    word_level = d.tokenizer == "word"
    return src_file is None and (d.dataset in PRETOKENIZED_DATASETS or word_level)


def result_header(
    split: str, src_file: str | Path | None, ref_file: str | Path | None, beam: int, lenpen: float, text_form: str
) -> dict[str, Any]:
    """What a translation evaluation scored: the split (or "file" and the files), beam, lenpen, and the
    text form BLEU was computed on."""
    return {"split": split if src_file is None else "file", "src_file": None if src_file is None else str(src_file),
            "ref_file": None if ref_file is None else str(ref_file), "beam": beam, "lenpen": lenpen,
            "bleu_text": text_form}  # fmt: skip
