"""The report's word-similarity table (Shalev et al., Table 4) summarises every seed, not one."""

from __future__ import annotations

import math
from pathlib import Path

from embtie.reporting.document import Table
from embtie.reporting.sections.context import ReportContext
from embtie.reporting.sections.wordsim import word_similarity


def _ws(out_rho: float, in_rho: float) -> dict:
    return {"SimLex-999": {"output": {"rho": out_rho, "found": 90, "total": 999},
                           "input": {"rho": in_rho, "found": 90, "total": 999}}}  # fmt: skip


def _ctx(per_run: list[dict]) -> ReportContext:
    names = list(dict.fromkeys(p["strategy"] for p in per_run))
    seed0 = {n: next(p for p in per_run if p["strategy"] == n) for n in names}
    return ReportContext({"per_run": per_run}, Path("."), "cmd", names, seed0, [], "tied", 10, 4, math.log(10))


def test_rho_is_the_mean_and_std_over_seeds() -> None:
    per_run = [
        {"strategy": "tied", "seed": 0, "diag": {"wordsim": _ws(0.10, 0.30)}},
        {"strategy": "tied", "seed": 1, "diag": {"wordsim": _ws(0.20, 0.30)}},
        {"strategy": "tied", "seed": 2, "diag": {"wordsim": _ws(0.30, 0.30)}},
        {"strategy": "fixed", "seed": 0, "diag": {"wordsim": _ws(-0.05, 0.12)}},
    ]
    table = word_similarity(_ctx(per_run))[1]
    assert isinstance(table, Table)
    tied, fixed, cov = table.rows
    assert tied[0] == "tied (3 seeds)"
    # mean 0.20, sample std of (0.1, 0.2, 0.3) = 0.10; the input side is constant: std 0
    assert tied[1] == "0.20 ± 0.10 / 0.30 ± 0.00"
    assert fixed == ["fixed (1 seed)", "-0.05 / 0.12"]
    assert cov == ["coverage (pairs found)", "90/999"]


def test_no_word_vocabulary_says_so() -> None:
    per_run = [{"strategy": "tied", "seed": 0, "diag": {"wordsim": None}}]
    blocks = word_similarity(_ctx(per_run))
    assert "Not available" in blocks[1].text
