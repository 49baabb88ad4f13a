"""The Moses scripts the papers' preparations run, in Python (sacremoses and ports of the small ones).

- ``tokenize``: ``tokenizer.perl -l LANG`` (XML escaping on; ``aggressive``: ``-a``). sacremoses lacks one rule
  of the Moses version fairseq's scripts clone: the last word of a line always has its final period split
  off ("u.s.a." -> "u.s.a ."); ``Tokenizer`` adds it (checked against fairseq's IWSLT14 dev sets: identical).
- ``clean_corpus``: ``clean-corpus-n.perl -ratio R CORPUS L1 L2 OUT MIN MAX``.
- ``lowercase``: ``lowercase.perl``; ``normalize_punctuation``: ``normalize-punctuation.perl -l LANG``;
  ``remove_non_printing``: ``remove-non-printing-char.perl``; ``seg_text``: the grep/sed lines that take the
  text of ``<seg id="N">`` lines of an XML/SGML test set.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from sacremoses import MosesPunctNormalizer
from sacremoses import MosesTokenizer as _SacreTokenizer

_FINAL_PERIOD = re.compile(r"^(\S+)\.$")
_PERL_SPACE = re.compile("[ \t\n\r\f\v\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
_SEG_OPEN = re.compile(r'<seg id="[0-9]*">\s*')
_SEG_CLOSE = re.compile(r"\s*</seg>\s*")


class Tokenizer(_SacreTokenizer):
    """sacremoses' tokenizer with the Moses rule that splits the final period of a line's last word."""

    def handles_nonbreaking_prefixes(self, text: str) -> str:
        tokens = text.split()
        m = _FINAL_PERIOD.match(tokens[-1]) if tokens else None
        if m is None:
            return str(super().handles_nonbreaking_prefixes(text))
        head = str(super().handles_nonbreaking_prefixes(" ".join(tokens[:-1]))) if len(tokens) > 1 else ""
        return f"{head} {m.group(1)} .".strip()


def tokenize(lines: Iterable[str], lang: str, aggressive: bool = False, workers: int = 1) -> list[str]:
    """``tokenizer.perl -l LANG [-a]`` over lines (no line endings); blank lines pass through unchanged.
    ``workers`` > 1 tokenizes chunks in that many processes (``-threads N``), in order."""
    lines = list(lines)
    if workers <= 1 or len(lines) < 20000:
        return _tokenize_chunk((lines, lang, aggressive))
    import multiprocessing

    step = 10000
    chunks = [(lines[i : i + step], lang, aggressive) for i in range(0, len(lines), step)]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        return [line for part in pool.imap(_tokenize_chunk, chunks) for line in part]


def _tokenize_chunk(job: tuple[list[str], str, bool]) -> list[str]:
    lines, lang, aggressive = job
    tok = Tokenizer(lang=lang)
    return [
        line if not line.strip() else tok.tokenize(line, aggressive_dash_splits=aggressive, return_str=True)
        for line in lines
    ]


def lowercase(lines: Iterable[str]) -> list[str]:
    return [line.lower() for line in lines]


def normalize_punctuation(lines: Iterable[str], lang: str) -> list[str]:
    norm = MosesPunctNormalizer(lang=lang)
    return [norm.normalize(line) for line in lines]


def remove_non_printing(lines: Iterable[str]) -> list[str]:
    """Every character of Unicode category C* (control, format, unassigned, ...) becomes a space."""
    return ["".join(" " if unicodedata.category(c).startswith("C") else c for c in line) for line in lines]


def seg_text(lines: Iterable[str]) -> list[str]:
    """``grep '<seg id' | sed 's/<seg id="[0-9]*">\\s*//g' | sed 's/\\s*<\\/seg>\\s*//g' | sed "s/’/'/g"``."""
    out = []
    for line in lines:
        if "<seg id" in line:
            line = _SEG_CLOSE.sub("", _SEG_OPEN.sub("", line))
            out.append(line.replace("\u2019", "'"))
    return out


_SGM_SEG = re.compile(r"<seg[^>]+>\s*(.*)\s*</seg>", re.IGNORECASE)


def input_from_sgm(lines: Iterable[str]) -> list[str]:
    """``input-from-sgm.perl``: the text of each ``<seg ...>...</seg>`` (a segment may span lines), with
    whitespace squeezed and trimmed."""
    out, pending = [], ""
    for line in lines:
        line = pending + line if pending else line
        pending = ""
        if re.search(r"<seg[^>]+>", line, re.IGNORECASE) and not re.search(r"</seg>", line, re.IGNORECASE):
            pending = line
            continue
        m = _SGM_SEG.search(line)
        if m:
            out.append(_PERL_SPACE.sub(" ", m.group(1)).strip(" "))
    return out


def _squeeze(line: str) -> str:
    line = _PERL_SPACE.sub(" ", line.replace("|", ""))
    return line[1:] if line.startswith(" ") else line


def clean_corpus(src: list[str], tgt: list[str], low: int, high: int, ratio: float = 9.0,
                 max_word_length: int = 1000) -> tuple[list[str], list[str]]:  # fmt: skip
    """``clean-corpus-n.perl``: pairs whose sides have ``low``..``high`` words and a length ratio <= ``ratio``,
    with ``|`` removed and whitespace squeezed (as the script writes them)."""
    kept = clean_pairs(src, tgt, low, high, ratio, max_word_length)
    return [f for _, f, _ in kept], [e for _, _, e in kept]


def clean_pairs(src: list[str], tgt: list[str], low: int, high: int, ratio: float = 9.0,
                max_word_length: int = 1000) -> list[tuple[int, str, str]]:  # fmt: skip
    """(index, source, target) of each pair ``clean_corpus`` keeps."""
    if len(src) != len(tgt):
        raise ValueError(f"clean_corpus: {len(src)} source lines but {len(tgt)} target lines")
    too_long = re.compile(r"[^\s|]{" + str(max_word_length + 1) + "}")
    out = []
    for i, (f, e) in enumerate(zip(src, tgt)):
        f, e = _squeeze(f), _squeeze(e)
        f, e = f[:-1] if f.endswith(" ") else f, e[:-1] if e.endswith(" ") else e
        if not f or not e or too_long.search(e) or too_long.search(f):
            continue
        fc, ec = len(f.split(" ")), len(e.split(" "))
        if not (low <= fc <= high and low <= ec <= high) or fc / ec > ratio or ec / fc > ratio:
            continue
        out.append((i, f, e))
    return out
