"""The comparison report: statistics, learning curves, step-0 loss, parameter counts, norms, norm vs
frequency, word similarity and row updates, each figure with a caption and the command behind it.
Everything is read from the comparison's saved files (``embtie.compare.collect``).

Each section is one function ``ReportContext -> list[Block]`` in ``embtie.report_sections``;
``SECTIONS`` gives their order. A new analysis adds its section function to ``SECTIONS``."""

from __future__ import annotations

from pathlib import Path

from embtie import report
from embtie.report_sections import Section, make_context
from embtie.report_sections.captioning import captions_and_vocab_usage
from embtie.report_sections.convergence import steps_to_targets
from embtie.report_sections.curves import learning_curves
from embtie.report_sections.frequency import norm_vs_frequency
from embtie.report_sections.initial_loss import step0_loss
from embtie.report_sections.norms import vector_norms
from embtie.report_sections.parameters import parameter_counts
from embtie.report_sections.row_updates import row_update_frequency
from embtie.report_sections.statistics import overview, throughput, validation_perplexity
from embtie.report_sections.summary import summary
from embtie.report_sections.translation import bleu_and_vocab_usage
from embtie.report_sections.update_dynamics import update_dynamics
from embtie.report_sections.wordsim import word_similarity

SECTIONS: list[Section] = [
    summary,
    overview,
    validation_perplexity,
    bleu_and_vocab_usage,  # translation runs only
    captions_and_vocab_usage,  # captioning runs only
    learning_curves,
    steps_to_targets,
    step0_loss,
    parameter_counts,
    vector_norms,
    norm_vs_frequency,
    word_similarity,
    row_update_frequency,
    update_dynamics,
    throughput,
]
"""The report's sections in order; each returns its blocks (an empty list to leave itself out)."""


def build(results: dict, out_dir: Path) -> report.Report:
    """The report of a comparison's results (``embtie.compare.collect``); plots are written to ``out_dir``."""
    ctx = make_context(results, out_dir)
    r = report.Report(f"embtie comparison: {results['preset']}")
    for section in SECTIONS:
        r.add(*section(ctx))
    return r
