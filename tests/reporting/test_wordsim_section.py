"""The report's word-similarity table (Shalev et al., Table 4) summarises every seed, not one."""

from __future__ import annotations

import comparison_records as cr
from embtie.analysis.records import WordSimilarity
from embtie.comparison.records import RunRecord
from embtie.reporting.document import Table, Text
from embtie.reporting.sections.wordsim import word_similarity


def _run(strategy: str, seed: int, ws: WordSimilarity | None) -> RunRecord:
    return cr.run(strategy, seed, diag=cr.diagnostics(wordsim=None if ws is None else {"SimLex-999": ws}))


def test_rho_is_the_mean_and_std_over_seeds() -> None:
    per_run = [
        _run("tied", 0, cr.wordsim(0.10, 0.30)),
        _run("tied", 1, cr.wordsim(0.20, 0.30)),
        _run("tied", 2, cr.wordsim(0.30, 0.30)),
        _run("fixed", 0, cr.wordsim(-0.05, 0.12)),
    ]
    table = word_similarity(cr.context(cr.comparison(per_run)))[1]
    assert isinstance(table, Table)
    tied, fixed, cov = table.rows
    assert tied[0] == "tied (3 seeds)"
    # mean 0.20, sample std of (0.1, 0.2, 0.3) = 0.10; the input side is constant: std 0
    assert tied[1] == "0.20 ± 0.10 / 0.30 ± 0.00"
    assert fixed == ["fixed (1 seed)", "-0.05 / 0.12"]
    assert cov == ["coverage (pairs found)", "90/999"]


def test_no_word_vocabulary_says_so() -> None:
    blocks = word_similarity(cr.context(cr.comparison([_run("tied", 0, None)])))
    assert isinstance(blocks[1], Text) and "Not available" in blocks[1].text
