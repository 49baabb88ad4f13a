"""Corpus BLEU and chrF of translations, computed by sacreBLEU (with signatures).

Two BLEUs, reported side by side:

- ``bleu``: sacreBLEU's default (13a tokenization of detokenized, cased text): the comparable number.
- ``bleu_tok`` (optional): BLEU the way most NMT papers of 2016-2020 computed it (Liu, Zhai & Chen
  included): ``multi-bleu.perl`` on Moses-tokenized text. It is sacreBLEU with ``tokenize="none"`` and
  ``smooth_method="none"`` (multi-bleu.perl gives 0 when an n-gram order has no match) on hypotheses
  and references that were both Moses-tokenized (``sacremoses``, the target language, no escaping:
  escaping maps tokens one-to-one, so it cannot change the counts), lowercased when the references are
  all lowercase (as multi-bleu.perl ``-lc`` on fairseq's lowercased IWSLT data). References that are
  already tokenized (``pretokenized=True``, e.g. fairseq's prepared IWSLT14) are split on whitespace as
  they are, hypotheses too: re-tokenizing tokenized text is not the identity (``'s`` -> ``' s``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sacrebleu.metrics import BLEU, CHRF

from embtie.errors import DataError


def corpus_scores(
    hyps: list[str],
    refs: list[str],
    tok_lang: str | None = None,
    *,
    pretokenized: bool = False,
    lowercase: bool | None = None,
) -> dict[str, Any]:
    """sacreBLEU (default 13a tokenization, mixed case) and chrF2 of ``hyps`` against one reference each.

    Returns {"bleu", "chrf", "bleu_signature", "chrf_signature", "bleu_detail", "sentences"}; with
    ``tok_lang`` (the target language, e.g. "en") also {"bleu_tok", "bleu_tok_signature",
    "bleu_tok_detail"} (see the module docstring; ``lowercase`` None: when every reference is lowercase).
    """
    if len(hyps) != len(refs):
        raise DataError(f"{len(hyps)} translations but {len(refs)} references; give line-aligned files")
    if not hyps:
        raise DataError("no sentences to score")
    # force: with pretokenized text (word-level presets) sacreBLEU's "forgot to detokenize?" warning is
    # expected, and printed once per scoring it buried training logs; it changes no score.
    bleu, chrf = BLEU(force=pretokenized), CHRF()
    b = bleu.corpus_score(hyps, [refs])
    c = chrf.corpus_score(hyps, [refs])
    res: dict[str, Any] = {
        "bleu": b.score,
        "chrf": c.score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "bleu_detail": str(b),
        "sentences": len(hyps),
    }
    if tok_lang is not None:
        res.update(tokenized_bleu(hyps, refs, tok_lang, pretokenized=pretokenized, lowercase=lowercase))
    return res


def tokenized_bleu(
    hyps: list[str], refs: list[str], lang: str, *, pretokenized: bool = False, lowercase: bool | None = None
) -> dict[str, Any]:
    """multi-bleu.perl-style BLEU: {"bleu_tok", "bleu_tok_signature", "bleu_tok_detail"} (module docstring)."""
    if len(hyps) != len(refs):
        raise DataError(f"{len(hyps)} translations but {len(refs)} references; give line-aligned files")
    if lowercase is None:
        lowercase = all(r == r.lower() for r in refs)
    if pretokenized:
        pretok = "given"
        hyps_t, refs_t = [" ".join(h.split()) for h in hyps], [" ".join(r.split()) for r in refs]
    else:
        pretok = f"moses.{lang}.noescape.sacremoses-{_sacremoses_version()}"
        hyps_t, refs_t = moses_tokenize(hyps, lang), moses_tokenize(refs, lang)
    bleu = BLEU(tokenize="none", smooth_method="none", lowercase=lowercase, force=True)
    b = bleu.corpus_score(hyps_t, [refs_t])
    return {
        "bleu_tok": b.score,
        "bleu_tok_signature": f"{bleu.get_signature()}|pretok:{pretok}",
        "bleu_tok_detail": str(b),
    }


def moses_tokenize(lines: list[str], lang: str) -> list[str]:
    """Each line Moses-tokenized (``sacremoses``, language ``lang``, no XML escaping), tokens joined by spaces."""
    tok = _moses(lang)
    return [tok.tokenize(line, escape=False, return_str=True) for line in lines]


@lru_cache(maxsize=4)
def _moses(lang: str) -> Any:
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)


def _sacremoses_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sacremoses")
    except PackageNotFoundError:  # pragma: no cover - installed as a dependency
        return "unknown"
