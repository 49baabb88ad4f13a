"""IWSLT14 De-En exactly as fairseq's ``examples/translation/prepare-iwslt14.sh``:

1. train: ``train.tags.de-en.{de,en}`` without the ``<url>``, ``<talkid>``, ``<keywords>`` lines and with the
   ``<title>``/``<description>`` tags removed, Moses-tokenized; ``clean-corpus-n -ratio 1.5`` 1-175 tokens;
   lowercased;
2. valid/test sets: the ``<seg>`` text of ``IWSLT14.TED*.{de,en}.xml`` (’ -> '), tokenized, lowercased;
3. valid = every 23rd training line, train = the others; test = dev2010 + TEDX dev2012 + tst2010-2012;
4. joint BPE: 10,000 merges learned on train.de + train.en (``learn_bpe.py -s 10000``), applied to each file.

Writes ``iwslt14/tok/{train,valid,test}.{de,en}`` (fairseq's ``tmp/``), ``iwslt14/bpe/code`` and
``iwslt14/bpe/{train,valid,test}.{de,en}``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from embtie.data.prepare import bpe, moses
from embtie.data.prepare.archives import member, tar_members, text_lines

LANGS = ("de", "en")
TEST_SETS = ("IWSLT14.TED.dev2010", "IWSLT14.TEDX.dev2012", "IWSLT14.TED.tst2010", "IWSLT14.TED.tst2011",
             "IWSLT14.TED.tst2012")  # fmt: skip
BPE_MERGES = 10000
DROPPED = ("<url>", "<talkid>", "<keywords>")
STRIPPED = ("<title>", "</title>", "<description>", "</description>")


def train_text(lines: list[str]) -> list[str]:
    """The grep/sed lines of the script over a ``train.tags`` file."""
    out = []
    for line in lines:
        if any(tag in line for tag in DROPPED):
            continue
        for tag in STRIPPED:
            line = line.replace(tag, "")
        out.append(line)
    return out


def write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)


def prepare(archives: list[Path], out: Path, say: Callable[[str], None]) -> None:
    """``archives[0]``: de-en.tgz; writes ``out/iwslt14/...``."""
    archive = archives[0]
    members = tar_members(archive)
    train: dict[str, list[str]] = {}
    say("tokenizing the training text (Moses, a few minutes)")
    for lang in LANGS:
        raw = text_lines(member(members, f"train.tags.de-en.{lang}", archive), f"train.tags.de-en.{lang}")
        train[lang] = moses.tokenize(train_text(raw), lang)
    de, en = moses.clean_corpus(train["de"], train["en"], 1, 175, ratio=1.5)
    cleaned = {"de": moses.lowercase(de), "en": moses.lowercase(en)}
    tok = out / "iwslt14" / "tok"
    for lang in LANGS:
        lines = cleaned[lang]
        write_lines(tok / f"valid.{lang}", [x for i, x in enumerate(lines, 1) if i % 23 == 0])
        write_lines(tok / f"train.{lang}", [x for i, x in enumerate(lines, 1) if i % 23 != 0])
        test: list[str] = []
        for name in TEST_SETS:
            xml = text_lines(member(members, f"{name}.de-en.{lang}.xml", archive), f"{name}.de-en.{lang}.xml")
            test += moses.lowercase(moses.tokenize(moses.seg_text(xml), lang))
        write_lines(tok / f"test.{lang}", test)
    say(f"learning {BPE_MERGES} joint BPE merges (subword-nmt)")
    code = out / "iwslt14" / "bpe" / "code"
    code.parent.mkdir(parents=True, exist_ok=True)
    joint = [x for lang in LANGS for x in (tok / f"train.{lang}").read_text(encoding="utf-8").split("\n")[:-1]]
    bpe.learn(joint, BPE_MERGES, code)
    for lang in LANGS:
        for split in ("train", "valid", "test"):
            lines = (tok / f"{split}.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
            write_lines(out / "iwslt14" / "bpe" / f"{split}.{lang}", bpe.apply(code, lines))
