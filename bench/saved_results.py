"""Saved results folders whose run directories are not kept, read back: the per-run rows of results.json
(with the rest of that file) or, for folders saved before results.json held rows, of results.csv, each as
a ``ResultRow``; the comparison those rows determine (its verdicts recomputed under the one verdict rule,
``embtie.comparison.verdicts.all_verdicts``); and report sections drawn from it as Markdown. The figure
test (tests/docs/test_quoted_figures.py) and bench/su_ordering.py read old folders with
these."""

from __future__ import annotations

import csv
import json
import typing
from pathlib import Path
from typing import Any

from embtie.comparison.records import Comparison, ResultRow, StrategySummary
from embtie.comparison.verdicts import all_verdicts
from embtie.reporting import document
from embtie.reporting.sections.context import ReportContext


def read_rows(folder: Path) -> tuple[list[ResultRow], dict[str, Any]]:
    """The per-run rows of ``folder/results.json`` (with the rest of that file), else of results.csv."""
    path = folder / "results.json"
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        return [ResultRow.from_json(r) for r in saved["rows"]], saved
    path = folder / "results.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{folder} has neither results.json nor results.csv")
    hints = typing.get_type_hints(ResultRow)
    with path.open(encoding="utf-8", newline="") as f:
        rows = [ResultRow(**{k: _typed(v, hints[k]) for k, v in r.items() if k in hints}) for r in csv.DictReader(f)]
    return rows, {}


def _typed(text: str, hint: Any) -> Any:
    """A CSV cell as its field's type (empty: None)."""
    if text == "":
        return None
    kinds = typing.get_args(hint) or (hint,)
    if str in kinds:
        return text
    return int(float(text)) if int in kinds else float(text)


def saved_comparison(folder: Path) -> Comparison:
    """The parts of a saved comparison its verdicts need: rows, summaries and the recomputed verdicts."""
    rows, saved = read_rows(folder)
    strategies = saved.get("strategies") or list(dict.fromkeys(r.strategy for r in rows))
    baseline = saved.get("baseline", "tied")
    summary = {n: StrategySummary.of([r for r in rows if r.strategy == n]) for n in strategies}
    return Comparison(
        preset=saved.get("preset", ""), runs_finished=len(rows), runs_planned=len(rows), strategies=strategies,
        seeds=saved.get("seeds", 0), overrides=saved.get("overrides", []), command=saved.get("command", ""),
        baseline=baseline, rows=rows, summary=summary, bootstrap={}, per_run=[], update_dynamics=[],
        verdicts=all_verdicts(rows, baseline), seeding=saved.get("seeding") or {"1": len(rows)},
    )  # fmt: skip


def context(comparison: Comparison, folder: Path) -> ReportContext:
    """A report context of a saved comparison (no runs: the sections that read rows and verdicts only)."""
    return ReportContext(comparison=comparison, out_dir=folder, cmd=comparison.command, names=comparison.strategies,
                         seed0={}, rows=comparison.rows, baseline=comparison.baseline, v=0, d=0, ln_v=0.0)  # fmt: skip


def markdown(blocks: list[document.Block], folder: Path) -> list[str]:
    """Blocks as Markdown chunks (paragraphs, tables with their captions)."""
    text = document.to_markdown(document.Report("", list(blocks)), folder)
    return [c.strip("\n") for c in text.split("\n\n")[1:] if c.strip()]
