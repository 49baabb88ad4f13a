"""The comparison report: statistics, learning curves, step-0 loss, parameter counts, norms, norm vs
frequency, word similarity and row updates, each figure with a caption and the command behind it.
Everything is read from the comparison's saved files (``embtie.comparison.collect``).

Each section is one function ``ReportContext -> list[Block]`` in ``embtie.reporting.sections``;
``SECTIONS`` gives their order. A new analysis adds its section function to ``SECTIONS``."""

from __future__ import annotations

from pathlib import Path

from embtie.comparison.records import Comparison
from embtie.reporting import document
from embtie.reporting.sections import Section, make_context
from embtie.reporting.sections.captioning import captions_and_vocab_usage
from embtie.reporting.sections.convergence import steps_to_targets
from embtie.reporting.sections.curves import learning_curves
from embtie.reporting.sections.frequency import norm_vs_frequency
from embtie.reporting.sections.initial_loss import step0_loss
from embtie.reporting.sections.norms import vector_norms
from embtie.reporting.sections.parameters import parameter_counts
from embtie.reporting.sections.row_updates import row_update_frequency
from embtie.reporting.sections.statistics import overview, throughput, validation_perplexity
from embtie.reporting.sections.summary import choice_lines as summary_choice_lines
from embtie.reporting.sections.summary import plain_summary, summary
from embtie.reporting.sections.translation import bleu_and_vocab_usage
from embtie.reporting.sections.update_dynamics import update_dynamics
from embtie.reporting.sections.verdicts import verdicts
from embtie.reporting.sections.wordsim import word_similarity

SECTIONS: list[Section] = [
    summary,
    verdicts,
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


def verdict_lines(comparison: Comparison, out_dir: Path) -> list[str]:
    """The report's plain summary as terminal lines (what ``embtie compare`` prints when it ends):
    the baseline, one sentence per strategy in the words of its verdict, and the tally."""
    ctx = make_context(comparison, out_dir)
    answer = len(summary_choice_lines(ctx))  # printed last instead (``choice_lines``)
    return [line.replace("`", "") for line in plain_summary(ctx)[answer:]]


def choice_lines(comparison: Comparison, out_dir: Path) -> list[str]:
    """Which strategy to use and whether the comparison is confirmatory (the Summary's first lines; what
    ``embtie compare`` prints last); [] for comparisons decided before choices were made."""
    return summary_choice_lines(make_context(comparison, out_dir))


def build(comparison: Comparison, out_dir: Path) -> document.Report:
    """The report of a comparison (``embtie.comparison.collect``); plots are written to ``out_dir``."""
    ctx = make_context(comparison, out_dir)
    title = comparison.preset if comparison.title is None else f"{comparison.title} ({comparison.preset})"
    r = document.Report(f"embtie comparison: {title}")
    for section in SECTIONS:
        r.add(*section(ctx))
    return r
