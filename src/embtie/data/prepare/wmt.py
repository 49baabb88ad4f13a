"""WMT En-De as the papers prepared it.

``prepare_wmt16`` — WMT16 as Liu et al. trained on it. They train "as Ott et al. (2018)", whose recipe
(fairseq examples/scaling_nmt) reads Google's preprocessed WMT'16 En-De: the output of google/seq2seq's
``bin/data/wmt16_en_de.sh`` (commit 7f485894), which this follows: train = Europarl v7 + Common Crawl +
News Commentary v11; newstest2013 (plain text of dev.tgz) and newstest2014 (``input-from-sgm.perl`` of
``newstest2014-deen-{src.de,ref.en}.sgm``); ``tokenizer.perl -q -l LANG``; ``clean-corpus-n`` 1-80 on
train; joint BPE with 32,000 merges learned on train.de + train.en, applied to each file. valid =
newstest2013, test = newstest2014 (``--validpref newstest2013.tok.bpe.32000 --testpref newstest2014...``).

``prepare_wmt14`` — WMT14 as fairseq's ``prepare-wmt14en2de.sh --icml17`` (the ConvS2S paper's data): train =
Europarl v7 + Common Crawl + News Commentary v9, each line ``normalize-punctuation.perl -l LANG |
remove-non-printing-char.perl | tokenizer.perl -a -l LANG``; test = ``<seg>`` text of
``newstest2014-deen-{src.en,ref.de}.sgm`` (test-full) tokenized with ``-a``; valid = every 100th training
line; joint BPE 40,000 merges on train.en + train.de; ``clean-corpus-n -ratio 1.5`` 1-250 on the BPE train
and valid. ``tok/`` holds the tokenized text of the pairs the clean kept (aligned with ``bpe/``).

Both write ``NAME/tok/{train,valid,test}.{en,de}``, ``NAME/bpe/code`` and ``NAME/bpe/{train,valid,test}.{en,de}``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from embtie.data.prepare import bpe, moses
from embtie.data.prepare.archives import member, tar_members, text_lines
from embtie.data.prepare.iwslt14 import write_lines

LANGS = ("en", "de")
Say = Callable[[str], None]


def _workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _lines(archive: Path, suffix: str) -> list[str]:
    return text_lines(member(tar_members(archive, (suffix,)), suffix, archive), suffix)


def _write_bpe(out: Path, name: str, merges: int, tok: dict[str, dict[str, list[str]]], say: Say) -> None:
    """Learn ``merges`` joint BPE merges on train (en then de, or as ordered in ``order``), apply to all."""
    say(f"learning {merges} joint BPE merges (subword-nmt; long on the full data)")
    code = out / name / "bpe" / "code"
    code.parent.mkdir(parents=True, exist_ok=True)
    bpe.learn([x for lang in tok["train"] for x in tok["train"][lang]], merges, code)
    for split, sides in tok.items():
        for lang, lines in sides.items():
            write_lines(out / name / "bpe" / f"{split}.{lang}", bpe.apply(code, lines))


def prepare_wmt16(archives: list[Path], out: Path, say: Say) -> None:
    """archives: europarl-v7 de-en, commoncrawl, nc-v11, wmt16 dev, wmt16 test."""
    europarl, crawl, nc, dev, _test = archives
    corpora = ((europarl, "europarl-v7.de-en"), (crawl, "commoncrawl.de-en"), (nc, "news-commentary-v11.de-en"))
    sets = {
        "valid": {lang: _lines(dev, f"newstest2013.{lang}") for lang in LANGS},
        "test": {
            "de": moses.input_from_sgm(_lines(dev, "newstest2014-deen-src.de.sgm")),
            "en": moses.input_from_sgm(_lines(dev, "newstest2014-deen-ref.en.sgm")),
        },
    }
    say("tokenizing (Moses; long on the full data)")
    raw = {lang: [x for archive, stem in corpora for x in _lines(archive, f"{stem}.{lang}")] for lang in LANGS}
    tok = {lang: moses.tokenize(raw[lang], lang, workers=_workers()) for lang in LANGS}
    de, en = moses.clean_corpus(tok["de"], tok["en"], 1, 80)
    splits: dict[str, dict[str, list[str]]] = {"train": {"de": de, "en": en}}
    for split, sides in sets.items():
        splits[split] = {lang: moses.tokenize(sides[lang], lang) for lang in ("de", "en")}
    for split, sides in splits.items():
        for lang, lines in sides.items():
            write_lines(out / "wmt16" / "tok" / f"{split}.{lang}", lines)
    _write_bpe(out, "wmt16", 32000, splits, say)


def prepare_wmt14(archives: list[Path], out: Path, say: Say) -> None:
    """archives: europarl-v7 (wmt13), commoncrawl, nc-v9, wmt17 dev, wmt14 test-full."""
    europarl, crawl, nc, _dev, test = archives
    corpora = ((europarl, "europarl-v7.de-en"), (crawl, "commoncrawl.de-en"), (nc, "news-commentary-v9.de-en"))
    say("normalizing and tokenizing (Moses -a; long on the full data)")
    train: dict[str, list[str]] = {}
    for lang in LANGS:
        lines = [x for archive, stem in corpora for x in _lines(archive, f"{stem}.{lang}")]
        lines = moses.remove_non_printing(moses.normalize_punctuation(lines, lang))
        train[lang] = moses.tokenize(lines, lang, aggressive=True, workers=_workers())
    sgm = {"en": "newstest2014-deen-src.en.sgm", "de": "newstest2014-deen-ref.de.sgm"}
    tok: dict[str, dict[str, list[str]]] = {"train": {}, "valid": {}, "test": {}}
    for lang in LANGS:
        tok["valid"][lang] = [x for i, x in enumerate(train[lang], 1) if i % 100 == 0]
        tok["train"][lang] = [x for i, x in enumerate(train[lang], 1) if i % 100 != 0]
        tok["test"][lang] = moses.tokenize(moses.seg_text(_lines(test, sgm[lang])), lang, aggressive=True)
    _write_bpe(out, "wmt14", 40000, tok, say)
    for split in ("train", "valid"):
        _clean_bpe_split(out / "wmt14", split, tok[split])
    for lang in LANGS:
        write_lines(out / "wmt14" / "tok" / f"test.{lang}", tok["test"][lang])


def _clean_bpe_split(folder: Path, split: str, tok: dict[str, list[str]]) -> None:
    """``clean-corpus-n -ratio 1.5 bpe.SPLIT en de SPLIT 1 250``, and the tokenized lines of the kept pairs."""
    bpe_lines = {lang: (folder / "bpe" / f"{split}.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
                 for lang in LANGS}  # fmt: skip
    kept = moses.clean_pairs(bpe_lines["en"], bpe_lines["de"], 1, 250, ratio=1.5)
    write_lines(folder / "bpe" / f"{split}.en", [en for _, en, _ in kept])
    write_lines(folder / "bpe" / f"{split}.de", [de for _, _, de in kept])
    for lang in LANGS:
        write_lines(folder / "tok" / f"{split}.{lang}", [tok[lang][i] for i, _, _ in kept])
