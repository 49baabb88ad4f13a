"""Decisions from paired seeds: is a strategy better than, worse than, or equivalent to the baseline,
or is it still undecided — and how many seeds would decide it.

- ``margins``: the margin of practical equivalence per metric (relative or absolute), ``--margin``;
- ``paired``: per-seed differences of two strategies trained with common random numbers, their
  Student-t interval and the tests of no difference and of equivalence (TOST);
- ``verdict``: the four verdicts, all tests of a comparison one step-down family (one error rate);
- ``choice``: which strategy to use, from all pairs of the strategies compared;
- ``signflip``: the exact sign-flip p beside the t-test, and which verdicts are model-based;
- ``pooled``: one verdict over several machines (the machine a block), and confirmation on fresh seeds;
- ``power``: the seeds an undecided comparison would need at its observed effect;
- ``sequential``: the looks of ``embtie compare --until-decided`` and the level each look spends.
"""

from embtie.decisions.margins import Margin, parse_margins
from embtie.decisions.paired import PairedDifference, paired_difference
from embtie.decisions.sequential import SequentialDesign
from embtie.decisions.verdict import ONE_FAMILY, RULES, TWO_FAMILIES, Decision, decide_all, rule_of

__all__ = [
    "ONE_FAMILY",
    "RULES",
    "TWO_FAMILIES",
    "Decision",
    "Margin",
    "PairedDifference",
    "SequentialDesign",
    "decide_all",
    "paired_difference",
    "parse_margins",
    "rule_of",
]
