"""A small raw English corpus for the tests of a user's own text: consecutive lines of Multi30k's English
training side (cased, punctuated: ``Two young, White males are outside near many bushes.``), split into
train / valid / test files."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

RAW = Path(os.environ.get("EMBTIE_DATA", "")) / "multi30k" / "raw" / "train.en.gz"


def raw_corpus(folder: Path, train: int = 2000, valid: int = 200, test: int = 200) -> dict[str, Path]:
    """train.txt, valid.txt and test.txt in ``folder`` (created): the first ``train`` lines, then the next
    ``valid`` and ``test``; split -> path."""
    with gzip.open(RAW, "rt", encoding="utf-8") as f:
        lines = [next(f).rstrip("\n") for _ in range(train + valid + test)]
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, (a, b) in {"train": (0, train), "valid": (train, train + valid),
                          "test": (train + valid, train + valid + test)}.items():  # fmt: skip
        out[split] = folder / f"{split}.txt"
        out[split].write_text("".join(line + "\n" for line in lines[a:b]), encoding="utf-8")
    return out
