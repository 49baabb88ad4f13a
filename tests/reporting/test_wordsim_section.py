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


def test_a_skipped_analysis_is_one_line_saying_why() -> None:
    """The reason the analysis recorded (subword pieces; a missing benchmark file) is the section's line."""
    why = "word similarity skipped: the output vocabulary is not English words"
    runs = [cr.run(s, 0, diag=cr.diagnostics(wordsim=None, wordsim_skipped=why)) for s in ("tied", "untied")]
    blocks = word_similarity(cr.context(cr.comparison(runs)))
    assert len(blocks) == 2 and isinstance(blocks[1], Text)
    assert blocks[1].text == "Word similarity skipped: the output vocabulary is not English words."


def test_benchmarks_left_out_are_named_under_the_table() -> None:
    why = "word similarity without: EN-MEN-TR-3k.txt not found under the data root"
    blocks = word_similarity(cr.context(cr.comparison([cr.run("tied", 0, diag=cr.diagnostics(
        wordsim={"SimLex-999": cr.wordsim(0.1, 0.2)}, wordsim_skipped=why))])))  # fmt: skip
    assert isinstance(blocks[1], Table) and isinstance(blocks[2], Text) and "EN-MEN-TR-3k.txt" in blocks[2].text
