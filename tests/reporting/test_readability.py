"""Reports that read at a glance (issue 28): plain numbers on log axes, one way to print p-values, one panel
for strategies whose row-update counts are identical, numbers without a minus zero, report.html for
every results folder, and pages drawn back from a saved report.md."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Report, Table, Text, fmt, to_markdown
from embtie.reporting.saved import from_markdown, write_saved_report
from embtie.reporting.sections.context import p_cell
from embtie.reporting.sections.summary import _p

REPO = Path(__file__).resolve().parents[2]


def _tick_labels(ax) -> list[str]:
    ax.figure.canvas.draw()
    axis = ax.yaxis
    return [t.get_text() for t in [*axis.get_majorticklabels(), *axis.get_minorticklabels()] if t.get_text()]


@pytest.mark.parametrize(("low", "high"), [(12.0, 18.0), (3000.0, 40000.0), (0.002, 0.05)])
def test_log_axes_label_ticks_with_plain_numbers(low, high):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [low, high])
    ax.set_yscale("log")
    plots.plain_log_ticks(fig)
    labels = _tick_labels(ax)
    plt.close(fig)
    assert labels, "a log axis over this range has labelled ticks"
    for text in labels:
        assert "times" not in text and "$" not in text and "e" not in text, labels
        float(text.replace(",", ""))  # a plain number


def test_plain_number():
    assert [plots.plain_number(x) for x in (14.5, 200.0, 0.01, 6000.0, 20000.0, 0.0005)] == [
        "14.5", "200", "0.01", "6,000", "20,000", "0.0005"
    ]  # fmt: skip


def test_p_values_print_alike_in_summary_and_tables():
    for p, cell in ((0.0004, "< 0.001"), (0.0, "< 0.001"), (0.0123, "0.012"), (0.29, "0.290")):
        assert p_cell(p) == cell
        assert _p(p) in (f"p {cell}", f"p = {cell}")
        assert not re.search(r"p = 0\.0*$", _p(p))  # never "p = 0.00"


def test_numbers_never_print_minus_zero():
    assert fmt(-0.001) == "0.00"
    assert fmt(-0.004, 3) == "-0.004"
    assert fmt(-1.5) == "-1.50"


def test_identical_row_update_counts_share_one_panel():
    same = plots.RowUpdateCounts(batches=4, input_counts=np.arange(50) % 5, output_counts=np.full(50, 4))
    other = plots.RowUpdateCounts(batches=4, input_counts=np.arange(50) % 3, output_counts=np.full(50, 4))
    updates = {"tied": same, "l2norm": same, "sqnorm": same, "untied": other}
    assert plots.row_update_groups(updates) == [["tied", "l2norm", "sqnorm"], ["untied"]]
    fig = plots.row_update_figure(updates)
    titles = [ax.get_title().replace("\n", " ") for ax in fig.axes if ax.get_visible()]
    plt.close(fig)
    assert titles == ["tied, l2norm, sqnorm (identical)", "untied"]


def test_a_saved_report_md_reads_back_into_the_same_blocks(tmp_path):
    png = tmp_path / "plot.png"
    fig, _ = plt.subplots()
    fig.savefig(png)
    plt.close(fig)
    report = Report(
        "embtie comparison: x",
        [
            Heading("Summary"),
            Text("Baseline `tied`: perplexity 234.7."),
            Table(["strategy", "p"], [["tied", "-"], ["l2norm", "< 0.001"]], "A caption, with a | bar."),
            Figure(png, "Loss per strategy.", "embtie compare x --report-only"),
        ],
    )
    back = from_markdown(to_markdown(report, tmp_path), tmp_path)
    assert back.title == report.title
    assert [type(b) for b in back.blocks] == [Heading, Text, Table, Figure]
    table = back.blocks[2]
    assert isinstance(table, Table)
    assert table.header == ["strategy", "p"] and table.rows[1] == ["l2norm", "< 0.001"]
    assert table.caption == "A caption, with a | bar."
    figure = back.blocks[3]
    assert isinstance(figure, Figure) and figure.command == "embtie compare x --report-only"
    (tmp_path / "report.md").write_text(to_markdown(report, tmp_path), encoding="utf-8")
    page = write_saved_report(tmp_path, "report.md", "Drawn from the saved report.md.").read_text(encoding="utf-8")
    assert page.index("Drawn from the saved report.md.") < page.index("Summary")
    assert "data:image/png;base64," in page


def _results_folders() -> list[Path]:
    """Every folder under results/ that holds a report, notes or tables (not plain run subfolders)."""
    marks = ("report.md", "results.csv", "README.md", "crn-variance.md")
    return sorted(
        d
        for d in (REPO / "results").rglob("*")
        if d.is_dir() and any((d / m).is_file() for m in marks) and "runs" not in d.relative_to(REPO).parts
    )


def test_every_results_folder_has_a_report_html():
    folders = _results_folders()
    assert folders
    missing = [str(d.relative_to(REPO)) for d in folders if not (d / "report.html").is_file()]
    assert missing == []
