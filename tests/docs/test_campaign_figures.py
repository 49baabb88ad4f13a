"""results/reliability-campaign/README.md quotes each campaign output's count ("`out-DATE.txt` is its output
... (N cases, M failed"): re-computed here from that file's own summary line and from its case lines (one
per case, each judged ``ok`` or ``FAIL``), so the document cannot drift from the outputs it cites."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "results" / "reliability-campaign"
QUOTE = re.compile(r"`(out-[0-9-]+\.txt)` is its output[^(]*\((\d+) cases, (\d+) failed")
"""a quoted count: the file, its cases and its failures (whitespace in the README folded to single spaces)."""
CASE = re.compile(r"^\S+\s+rc=\d+\s+lines=\d+\s+tb=\d+\s+(ok|FAIL)\b", re.M)


def quotes() -> list[tuple[str, int, int]]:
    text = " ".join((FOLDER / "README.md").read_text(encoding="utf-8").split())
    return [(name, int(n), int(failed)) for name, n, failed in QUOTE.findall(text)]


def test_the_readme_quotes_the_counts_of_its_outputs():
    assert len(quotes()) >= 2, "README.md quotes no campaign output's count"


@pytest.mark.parametrize(("name", "cases", "failed"), quotes())
def test_a_quoted_count_is_the_output_s_own(name, cases, failed):
    text = (FOLDER / name).read_text(encoding="utf-8")
    assert f"\n{cases} cases, {failed} failed\n" in text, f"{name} does not end with {cases} cases, {failed} failed"
    judged = CASE.findall(text)
    assert (len(judged), judged.count("FAIL")) == (cases, failed), name
