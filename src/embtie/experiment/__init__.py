"""Comparisons and ladders from Python, as ``embtie compare`` runs them (docs/reference.md, "A comparison
from Python")::

    from embtie.experiment import ComparisonRequest, run_comparison

    r = run_comparison(ComparisonRequest("ptb-gpt-tiny", ["train.max_steps=50"], "tied,untied", seeds=2))
    print(r.verdicts["valid_ppl"].decisions["untied"]["verdict"], r.report_html)

- ``request``: ``ComparisonRequest`` (one field per option of ``embtie compare``) and the ``CompareSpec``
  it stands for
- ``compare``: ``run_comparison`` -> ``ComparisonResult`` (runs, the collected ``Comparison``, its
  verdicts and choice, the files written)
- ``ladder``: ``run_ladder`` -> ``LadderResult`` (one comparison per rung, the ladder's results and report)

This package sits above ``comparison``, ``ladder`` and ``reporting`` (it writes the report they describe)
and below ``commands``: ``embtie compare`` and ``embtie hf-compare`` are thin commands over it.
"""

from embtie.experiment.compare import ComparisonResult, run_comparison
from embtie.experiment.ladder import LadderResult, run_ladder
from embtie.experiment.request import ComparisonRequest

__all__ = ["ComparisonRequest", "ComparisonResult", "LadderResult", "run_comparison", "run_ladder"]
