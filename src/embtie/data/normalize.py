"""Normalizations of raw text before it is cut into words (``data.normalize`` of a language model).

- ``none``: the text as it is;
- ``lower``: lowercased;
- ``ptb``: lowercased, punctuation split from words (each punctuation character a token of its own, an
  apostrophe inside a word kept: ``don't``), and every number (digits, with ``,``, ``.``, ``:``, ``/`` or
  ``-`` between them) written ``N``, as the Penn Treebank's language-modelling text is.

A normalization changes the tokens only: bits per byte count the bytes of the original text.
"""

from __future__ import annotations

import re

NORMALIZATIONS = ("none", "lower", "ptb")

_PTB_TOKEN = re.compile(r"\d(?:[\d,.:/-]*\d)?|\w+(?:'\w+)*|[^\w\s]")
_NUMBER = re.compile(r"\d(?:[\d,.:/-]*\d)?")


def normalize_line(line: str, how: str) -> str:
    """``line`` normalized by ``how`` (one of ``NORMALIZATIONS``), tokens separated by single spaces for ``ptb``."""
    if how == "none":
        return line
    if how == "lower":
        return line.lower()
    if how == "ptb":
        words = _PTB_TOKEN.findall(line.lower())
        return " ".join("N" if _NUMBER.fullmatch(w) else w for w in words)
    raise ValueError(f"unknown normalization {how!r}; choose one of {', '.join(NORMALIZATIONS)}")
