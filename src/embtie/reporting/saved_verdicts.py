"""Saved reports redrawn under the four verdicts, for results folders whose run directories are not kept.

A report written before the paired-seed verdicts read each strategy as 'better', 'worse' or 'within
noise' (Welch's test over seeds and the evaluation bootstrap). Its per-seed values are still in the
folder's results.json (or results.csv), and the verdicts rest on those alone, so they are recomputed
here with the one rule every new report uses (``embtie.comparison.verdicts.all_verdicts``: paired seeds,
one look at level 0.05, Holm over the strategies, the default margins) and drawn by the same report
sections (``summary``, ``verdicts``, the verdict cells of ``context``):

- the Summary's verdict sentences are replaced by the new ones, followed by the Verdicts section;
- every table with a verdict column gets the new verdict and the paired-seed p (Holm) beside the
  bootstrap's, and its caption the new description of that p;
- the rest of the page (budget, figures, diagnostics) is kept as it was saved.

``embtie.reporting.saved`` then draws report.html from the redrawn report.md::

    python -m embtie.reporting.saved_verdicts results/press-wolf [more folders]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import typing
from pathlib import Path
from typing import Any

from embtie.comparison.records import Comparison, ResultRow, StrategySummary
from embtie.comparison.verdicts import all_verdicts
from embtie.errors import DataError
from embtie.reporting import document
from embtie.reporting.saved import write_saved_report
from embtie.reporting.sections.context import MORE_FEWER, ReportContext, decision, p_cell, verdict_cell
from embtie.reporting.sections.summary import numerics_text, plain_summary
from embtie.reporting.sections.verdicts import verdicts

NOTE = (
    "Drawn from the report.md saved when these runs were trained, with its verdicts recomputed from the "
    "per-seed values of results.json or results.csv under the four verdicts (embtie.reporting.saved_verdicts: "
    "paired seeds, Holm, the default margins); the run directories are not kept, so the rest of the page "
    "keeps that version's formatting."
)
"""the note at the top of a redrawn report.html."""

OLD_P_SEEDS = [
    re.compile(
        r"p \(seeds\): Welch's t-test over the per-seed values, the noise of training\. The verdict is "
        r"'better' or 'worse' only when both are below 0\.05 \(the seed test where there are >= 2 seeds\), "
        r"else 'within noise'\."
    ),
    re.compile(r"p \(seeds\): Welch's t-test over per-seed (values|BLEU); the verdict needs both below 0\.05\."),
]
NEW_P_SEEDS = (
    "p (paired seeds): the paired t-test over seeds (Holm-corrected over the strategies), the noise of training; "
    "the verdict comes from the paired seeds (section Verdicts)."
)
_OVERVIEW = ("Strategies:", "Config overrides", "Partial report")


def read_rows(folder: Path) -> tuple[list[ResultRow], dict[str, Any]]:
    """The per-run rows of ``folder/results.json`` (with the rest of that file), else of results.csv."""
    path = folder / "results.json"
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        return [ResultRow.from_json(r) for r in saved["rows"]], saved
    path = folder / "results.csv"
    if not path.is_file():
        raise DataError(f"{folder} has neither results.json nor results.csv; give a comparison's results folder")
    hints = typing.get_type_hints(ResultRow)
    rows = []
    with path.open(encoding="utf-8", newline="") as f:
        for record in csv.DictReader(f):
            rows.append(ResultRow(**{k: _typed(v, hints[k]) for k, v in record.items() if k in hints}))
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
    """The parts of a saved comparison the verdicts need: rows, summaries and the recomputed verdicts."""
    rows, saved = read_rows(folder)
    strategies = saved.get("strategies") or list(dict.fromkeys(r.strategy for r in rows))
    baseline = saved.get("baseline", "tied")
    summary = {n: StrategySummary.of([r for r in rows if r.strategy == n]) for n in strategies}
    return Comparison(
        preset=saved.get("preset", ""), runs_finished=len(rows), runs_planned=len(rows), strategies=strategies,
        seeds=saved.get("seeds", 0), overrides=saved.get("overrides", []), command=saved.get("command", ""),
        baseline=baseline, rows=rows, summary=summary, tests={}, bleu_tests={}, vu_tests={}, per_run=[],
        update_dynamics=[], verdicts=all_verdicts(rows, baseline),
        seeding=saved.get("seeding") or {"1": len(rows)},
    )  # fmt: skip


def _context(comparison: Comparison, folder: Path) -> ReportContext:
    return ReportContext(comparison=comparison, out_dir=folder, cmd=comparison.command, names=comparison.strategies,
                         seed0={}, rows=comparison.rows, baseline=comparison.baseline, v=0, d=0, ln_v=0.0)  # fmt: skip


def _markdown(blocks: list[document.Block], folder: Path) -> list[str]:
    """Blocks as Markdown chunks (paragraphs, tables with their captions)."""
    text = document.to_markdown(document.Report("", list(blocks)), folder)
    return [c.strip("\n") for c in text.split("\n\n")[1:] if c.strip()]


def _metric(header: list[str], column: int) -> str:
    """The tested metric of the verdict column ``column``: that of the nearest Δ column before it."""
    delta = next((h for h in reversed(header[:column]) if "Δ" in h), "")
    return "bleu" if "BLEU" in delta else "vu" if "VU" in delta else "valid_ppl"


def _patch_table(chunk: str, ctx: ReportContext) -> str:
    """A saved table with its verdict columns (and the seed p beside them) from the recomputed verdicts."""
    lines = chunk.split("\n")
    header = [c.strip() for c in lines[0].strip().strip("|").split(" | ")]
    columns = [i for i, h in enumerate(header) if h == "verdict"]
    if not columns:
        return chunk
    out = [lines[0].replace("p: bootstrap / seeds", "p: bootstrap / paired seeds"), lines[1]]
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        name = cells[0]
        for i in columns:
            metric = _metric(header, i)
            if name == ctx.baseline or (cells[i] == "-" and cells[i - 1] == "-"):
                continue
            cells[i] = verdict_cell(ctx, metric, name, MORE_FEWER if metric == "vu" else None)
            if header[i - 1].startswith("p: bootstrap"):
                d = decision(ctx, metric, name)
                boot = cells[i - 1].split(" / ")[0]
                cells[i - 1] = f"{boot} / {p_cell(None if d is None else d.p_difference_holm)}"
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _patch_caption(chunk: str) -> str:
    for old in OLD_P_SEEDS:
        chunk = old.sub(NEW_P_SEEDS, chunk)
    return chunk


def redraw_markdown(text: str, comparison: Comparison, folder: Path) -> str:
    """``text`` (a saved report.md) with its verdicts redrawn from ``comparison`` (``saved_comparison``)."""
    ctx = _context(comparison, folder)
    chunks = [c for c in text.rstrip("\n").split("\n\n")]
    title = next(i for i, c in enumerate(chunks) if c.startswith("# "))
    end = next((i for i in range(title + 1, len(chunks)) if chunks[i].startswith("## ") and not _opening(chunks[i])),
               len(chunks))  # fmt: skip
    opening = chunks[title + 1 : end]
    budget = [c for c in opening if c.startswith("Budget:")]
    overview = [c for c in opening if c.startswith(_OVERVIEW)]
    summary = ["## Summary", *budget, numerics_text(ctx), *plain_summary(ctx)]
    kept = _kept(chunks[end:], folder)
    rest = [_patch_caption(_patch_table(c, ctx)) if c.startswith(("|", "*")) else c for c in kept]
    body = [*chunks[:title + 1], *summary, *_markdown(verdicts(ctx), folder), *overview, *rest]  # fmt: skip
    return "\n\n".join(body) + "\n"


def _kept(chunks: list[str], folder: Path) -> list[str]:
    """The chunks but the figures whose PNG the folder does not hold (with their "Regenerate:" lines)."""
    out: list[str] = []
    missing = False
    for c in chunks:
        link = re.match(r"^!\[[^\]]*\]\(([^)]+)\)$", c)
        if link:
            missing = not (folder / link[1]).is_file()
        elif not (missing and " Regenerate: `" in c):
            missing = False
        if not missing:
            out.append(c)
    return out


def _opening(chunk: str) -> bool:
    """The headings a saved report opens with (Summary, Verdicts), which the redraw replaces."""
    return chunk in ("## Summary", "## Verdicts: paired seeds and margins of equivalence")


def redraw(folder: Path, note: str = NOTE) -> Path:
    """``folder/report.md`` redrawn under the four verdicts and report.html drawn from it; returns the page."""
    folder = Path(folder)
    md = folder / "report.md"
    comparison = saved_comparison(folder)
    md.write_text(redraw_markdown(md.read_text(encoding="utf-8"), comparison, folder), encoding="utf-8")
    return write_saved_report(folder, "report.md", note)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m embtie.reporting.saved_verdicts",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--note", default=NOTE, help="the note at the top of report.html")
    args = parser.parse_args(argv)
    for folder in args.folders:
        print(redraw(folder, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
