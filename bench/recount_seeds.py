"""Recount the "paired seeds would decide it" of saved reports with the corrected power function.

Until 2026-11-28, ``embtie.decisions.power.seeds_to_decide`` read scipy's noncentral t, whose ``cdf``
returns NaN far in a tail; a NaN power made the search print "about 111" or "more than 200" where 4
seeds decide. The reports under results/ keep no run directories, so they cannot be drawn again from
their runs; each undecided sentence carries what the count rests on, though: the interval (symmetric
Student-t, so its centre is the mean difference and its half-width gives the spread), its confidence,
the seeds, the margin; the level the count was searched at is the design's, printed under each verdict
table ("level 0.05", or "each test at level 0.05/5 = 0.0100"). This script recomputes every count from
those numbers and rewrites the sentence's tail in report.md and in report.html (in the order they
appear), leaving the rest of both files as they were::

    python -m bench.recount_seeds results/press-wolf [more folders]      # --check: print, change nothing

The printed interval has two decimals, so a count at the edge of a seed can differ by one from the count
the unrounded values give.
"""

from __future__ import annotations

import argparse
import html
import math
import re
from pathlib import Path

from scipy import stats as st

from embtie.decisions.power import MAX_SEEDS, seeds_to_decide

SENTENCE = re.compile(
    r"(?P<conf>\d+(?:\.\d+)?)% CI \[(?P<lo>[+-]?\d+(?:\.\d+)?)%?, (?P<hi>[+-]?\d+(?:\.\d+)?)%?\] over "
    r"(?P<n>\d+) paired seeds; undecided: neither a difference nor equivalence within ±(?P<margin>\d+(?:\.\d+)?)%? "
    r"is shown; (?P<tail>about \d+ paired seeds would decide it at this effect \(80% power\)|more than "
    r"\d+ paired seeds would be needed at this effect and spread)"
)
LEVEL = re.compile(
    r"each test at level [\d.]+/\d+ = (?P<look>[\d.]+)|Design: one look at \d+ paired seeds, level (?P<one>[\d.]+)"
)


def tail(count: int | None) -> str:
    """The words ``embtie.reporting.sections.summary`` ends an undecided sentence with."""
    if count is None:
        return f"more than {MAX_SEEDS} paired seeds would be needed at this effect and spread"
    return f"about {count} paired seeds would decide it at this effect (80% power)"


def design_level(markdown: str) -> float:
    """The level every test of the report's design ran at (the per-look level of a sequential design)."""
    m = LEVEL.search(markdown)
    if m is None:
        return 0.05  # reports older than the design line: one look at the default level
    return float(m.group("look") or m.group("one"))


def _count(lo: float, hi: float, match: re.Match[str], level: float) -> int | None:
    """The seeds to decide behind an interval [lo, hi]."""
    n = int(match["n"])
    t = float(st.t.ppf(0.5 + float(match["conf"]) / 200, n - 1))
    sd = (hi - lo) / 2 / t * math.sqrt(n)
    return seeds_to_decide((lo + hi) / 2, sd, float(match["margin"]), level)


def recount(match: re.Match[str], level: float) -> str:
    """The corrected tail of one undecided sentence: the printed one when some interval that rounds to
    the printed bounds (each ± 0.005) gives its count, else the count of the printed bounds."""
    lo, hi = float(match["lo"]), float(match["hi"])
    near = {_count(lo + a, hi + b, match, level) for a in (-0.005, 0.005) for b in (-0.005, 0.005)}
    finite = [c for c in near if c is not None]
    printed = re.search(r"about (\d+)", match["tail"])
    if printed is None and None in near:
        return match["tail"]
    if printed is not None and finite and min(finite) <= int(printed.group(1)) <= max(finite):
        return match["tail"]
    return tail(_count(lo, hi, match, level))


def redraw(folder: Path, check: bool) -> list[tuple[str, str]]:
    """Rewrite the counts of ``folder``'s report.md and report.html; the (old, new) tails that changed."""
    md_path, html_path = folder / "report.md", folder / "report.html"
    markdown = md_path.read_text(encoding="utf-8")
    level = design_level(markdown)
    pairs = [(m["tail"], recount(m, level), m.start("tail"), m.end("tail")) for m in SENTENCE.finditer(markdown)]
    changed = [(old, new) for old, new, _, _ in pairs if old != new]
    if check or not changed:
        return changed
    for _old, new, start, end in reversed(pairs):
        markdown = markdown[:start] + new + markdown[end:]
    md_path.write_text(markdown, encoding="utf-8")
    if html_path.is_file():
        page, at = html_path.read_text(encoding="utf-8"), 0
        for old, new, _, _ in pairs:
            old_h, new_h = html.escape(old, quote=True), html.escape(new, quote=True)
            at = page.index(old_h, at)
            page, at = page[:at] + new_h + page[at + len(old_h):], at + len(new_h)
        html_path.write_text(page, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recount_seeds", description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="results folders with a report.md")
    parser.add_argument("--check", action="store_true", help="print the counts that would change; write nothing")
    args = parser.parse_args(argv)
    for folder in args.folders:
        for old, new in redraw(folder, args.check):
            print(f"{folder}: {old} -> {new}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
