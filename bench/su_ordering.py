"""Su's ordering claim ("ln V/d init converges slowest") as paired verdicts: every other countermeasure (and
tied) against tied-loginit, from the per-seed values of results/su-convergence/results.json (the run
directories are not kept). Same rule as every report (embtie.comparison.verdicts.all_verdicts: paired seeds, one look at
level 0.05, Holm over the strategies, margin ±1% perplexity). Writes ordering.md beside it::

    python -m bench.su_ordering
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bench.saved_results import context, markdown, saved_comparison
from embtie.comparison.verdicts import all_verdicts
from embtie.decisions import TWO_FAMILIES
from embtie.reporting.sections.verdicts import verdicts

HERE = Path(__file__).resolve().parents[1] / "results" / "su-convergence"
"""the results folder this script reads and writes."""

BASELINE = "tied-loginit"


def ordering_markdown(folder: Path = HERE) -> str:
    """ordering.md's text: the Verdicts section of the saved comparison redrawn against ``BASELINE``."""
    saved = saved_comparison(folder)
    comparison = replace(saved, baseline=BASELINE, verdicts=all_verdicts(saved.rows, BASELINE, rule=TWO_FAMILIES))
    chunks = markdown(verdicts(context(comparison, folder)), folder)
    head = (f"# Su's ordering: every strategy against {BASELINE} (from results.json)\n\n"
            "Written by `python -m bench.su_ordering` (recomputed by "
            "tests/docs/test_quoted_figures.py). 'worse' here means: converges less far than "
            f"{BASELINE} at 600 steps (higher perplexity).\n")  # fmt: skip
    return head + "\n" + "\n\n".join(chunks) + "\n"


if __name__ == "__main__":
    (HERE / "ordering.md").write_text(ordering_markdown(), encoding="utf-8")
    print((HERE / "ordering.md").read_text(encoding="utf-8"))
