"""Word similarity of input vs output vectors (Press & Wolf; Shalev et al., Table 4).

For each benchmark pair (w1, w2, human score) both words are looked up in the model's vocabulary, the
cosine similarity of their vectors is taken, and Spearman's rho against the human scores is reported
with the coverage (pairs whose two words are in the vocabulary). Benchmarks live in
``$EMBTIE_DATA/wordsim`` (see its SOURCE.md): tab-separated ``word1 word2 score``, some with CRLF line
endings; WS-353 lists money-cash twice with two scores (both kept, as distributed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from scipy import stats
from torch import Tensor

from embtie.data.files import DataFile, read_lines
from embtie.errors import DataError

BENCHMARKS: dict[str, DataFile] = {
    "SimLex-999": DataFile(
        "wordsim/EN-SIMLEX-999.txt", "405394ffb7d25f6d0e3c041f87c9f27d29dc6b047506769953e85c4523b11685"
    ),
    "MEN": DataFile("wordsim/EN-MEN-TR-3k.txt", "888b13580faa362c7b11da0a670258cf1b1eb4bf0ecbcd418918729a3bd3f43a"),
    "MTurk-771": DataFile(
        "wordsim/EN-MTurk-771.txt", "04dc297c9e86b6fa7cf8ef0e4ba2e2c8d3399ec68d92fb7a53c0b4aae27198b5"
    ),
    "WS-353": DataFile("wordsim/EN-WS-353-ALL.txt", "ce12919b240af45bdf46d243601eaca2b6212b159b5e7e9b435ee7ee40c5619c"),
}


@dataclass(frozen=True)
class Pair:
    w1: str
    w2: str
    score: float


def parse_pairs(lines: list[str], source: str = "word-similarity file") -> list[Pair]:
    """Pairs from ``word1<TAB>word2<TAB>score`` lines (CR stripped, blank lines skipped, words lower-cased)."""
    pairs = []
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 3:
            raise DataError(f"{source} line {n}: expected 'word1<TAB>word2<TAB>score', got {line!r}")
        try:
            score = float(parts[2])
        except ValueError:
            raise DataError(f"{source} line {n}: score {parts[2]!r} is not a number") from None
        pairs.append(Pair(parts[0].strip().lower(), parts[1].strip().lower(), score))
    return pairs


def load_benchmark(name: str, root: Path | None = None) -> list[Pair]:
    """The pairs of benchmark ``name`` (a key of BENCHMARKS), checksum verified."""
    if name not in BENCHMARKS:
        raise DataError(f"unknown word-similarity benchmark {name!r}; choose one of: {', '.join(BENCHMARKS)}")
    f = BENCHMARKS[name]
    path = f.path(root)
    return parse_pairs(read_lines(path, f.sha256), str(path))


def similarity_correlation(vectors: Tensor, stoi: dict[str, int], pairs: list[Pair]) -> dict:
    """Spearman's rho between cosine similarities of (V, d) ``vectors`` and human scores.

    Returns {"rho", "pvalue", "found", "total", "coverage"}: only pairs with both words in ``stoi``
    count; rho is NaN when fewer than 3 pairs are found.
    """
    idx = [(stoi[p.w1], stoi[p.w2], p.score) for p in pairs if p.w1 in stoi and p.w2 in stoi]
    total, found = len(pairs), len(idx)
    out = {"found": found, "total": total, "coverage": found / total if total else 0.0}
    if found < 3:
        return {"rho": float("nan"), "pvalue": float("nan"), **out}
    a = torch.tensor([i for i, _, _ in idx])
    b = torch.tensor([j for _, j, _ in idx])
    v = vectors.detach().double()
    cos = torch.nn.functional.cosine_similarity(v[a], v[b], dim=1).cpu().numpy()
    human = np.array([s for _, _, s in idx])
    if np.ptp(cos) == 0 or np.ptp(human) == 0:
        return {"rho": float("nan"), "pvalue": float("nan"), **out}
    res = stats.spearmanr(cos, human)
    return {"rho": float(res.statistic), "pvalue": float(res.pvalue), **out}


def missing_benchmarks(benchmarks: list[str] | None = None) -> list[Path]:
    """The files of ``benchmarks`` (default: all four) that are not on the data root: an optional data
    set (``embtie data get wordsim``) whose absence skips word similarity rather than failing an analysis."""
    return [p for p in (BENCHMARKS[n].path() for n in benchmarks or list(BENCHMARKS)) if not p.is_file()]


def word_similarity_table(
    input_vectors: Tensor, output_vectors: Tensor, stoi: dict[str, int], benchmarks: list[str] | None = None
) -> dict[str, dict[str, dict]]:
    """{benchmark: {"input": similarity_correlation(...), "output": ...}} for the four standard sets."""
    table = {}
    for name in benchmarks or list(BENCHMARKS):
        pairs = load_benchmark(name)
        table[name] = {
            "input": similarity_correlation(input_vectors, stoi, pairs),
            "output": similarity_correlation(output_vectors, stoi, pairs),
        }
    return table


NOT_WORDS = (
    "word similarity skipped: the output vocabulary is not English words (subword pieces, or another "
    "language), and the benchmarks pair English words"
)
"""the report's line when the run's tokens are not words the benchmarks could name."""
NO_COUNTS = "word similarity skipped: the run's output vocabulary has no training counts"
"""the report's line when the task knows no counts of its output vocabulary (its vocabulary facts)."""


def missing_files_note(missing: list[Path], total: int) -> str:
    """The report's line for benchmark files absent from the data root (all ``total`` of them, or some)."""
    names = ", ".join(p.name for p in missing)
    head = "word similarity skipped" if len(missing) == total else "word similarity without"
    return f"{head}: {names} not found under the data root (`embtie data get wordsim` brings them)"


def available_table(
    input_vectors: Tensor, output_vectors: Tensor, words: dict[str, int] | None
) -> tuple[dict[str, dict[str, dict]] | None, str | None]:
    """``word_similarity_table`` on the benchmarks whose files are present, and the one line saying what
    was skipped and why (None when nothing was): word similarity is optional, so vectors of subword pieces
    (``words`` None) or a missing benchmark file skip it instead of failing the analysis."""
    if words is None:
        return None, NOT_WORDS
    missing = missing_benchmarks()
    present = [n for n, f in BENCHMARKS.items() if f.path() not in missing]
    note = missing_files_note(missing, len(BENCHMARKS)) if missing else None
    if not present:
        return None, note
    return word_similarity_table(input_vectors, output_vectors, words, present), note
