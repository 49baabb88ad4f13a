"""The matched arms of ``embtie compare --match`` (``comparison.arms``): how each arm's body was adjusted and
where it landed against the target."""

from __future__ import annotations

from embtie.comparison.arms import Matching
from embtie.reporting.document import Block, Heading, Table, Text


def matching_blocks(m: Matching) -> list[Block]:
    """A heading, the rule, and one row per arm: its depth before and after, and its gap to the target."""
    rows = [
        [a.strategy, f"{a.key} {a.before} → {a.after}" if a.after != a.before else "unchanged",
         f"{a.unadjusted:,.0f}", f"{a.value:,.0f}", f"{100 * m.gap(a):+.2f}%"]
        for a in m.arms
    ]  # fmt: skip
    changed = [a for a in m.arms if a.after != a.before]
    summary = (
        "; ".join(f"{a.strategy} deepened from {a.before} to {a.after} blocks" for a in changed)
        if changed
        else f"no arm needed an adjustment: their {m.what} agree within the tolerance"
    )
    return [
        Heading("Matched arms"),
        Text(
            f"`--match {m.mode}`: every arm is brought to the largest arm's {m.what} ({m.target:,.0f}) within "
            f"±{100 * m.tolerance:g}% by the depth of its body (the width is the embedding width, so depth is what "
            f"moves; MobileLLM's comparison). {summary}."
        ),
        Table(["strategy", "adjustment", f"{m.what} before", "after", "gap to target"], rows),
    ]
