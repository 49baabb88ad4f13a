"""report.html for a results folder whose run directories are not kept: the page is drawn from the saved
Markdown (a comparison's report.md and its PNGs, or a folder's own notes), with a note saying what it was
drawn from. ``embtie compare ... --report-only`` redraws a report properly where the runs are at hand.

    python -m embtie.reporting.saved results/su-convergence [--source report.md] [--note TEXT]

The Markdown is read back into the blocks ``embtie.reporting.document`` writes (headings, paragraphs,
tables with their italic captions, figures with their "Regenerate:" lines), so the page looks like every
other report; code blocks become monospaced lines, lists paragraphs.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from embtie.reporting.document import Block, Figure, Heading, Report, Table, Text, to_html

_FIGURE = re.compile(r"^!\[(?P<caption>[^\]]*)\]\((?P<path>[^)]+)\)$")
_REGENERATE = re.compile(r"^\*(?P<caption>.*)\* Regenerate: `(?P<command>.*)`$")
_CAPTION = re.compile(r"^\*(?P<text>[^*].*[^*])\*$")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")


def _cells(line: str) -> list[str]:
    inner = line.strip().strip("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def _plain(text: str) -> str:
    """Markdown inline text for a report block: links as 'text (target)', emphasis markers dropped."""
    text = _LINK.sub(lambda m: f"{m[1]} ({m[2]})", text)
    return text.replace("**", "")


def _code(lines: list[str], i: int) -> tuple[list[Block], int]:
    """A fenced code block from line ``i``: one monospaced line each; the index after it."""
    j = i + 1
    out: list[Block] = []
    while j < len(lines) and not lines[j].startswith("```"):
        if lines[j].strip():
            out.append(Text(f"`{lines[j].rstrip()}`"))
        j += 1
    return out, j + 1


def _figure(lines: list[str], i: int, base: Path, caption: str, path: str) -> tuple[Figure, int]:
    """A figure line at ``i`` and its "Regenerate:" line when one follows; the index after them."""
    j = i + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    regen = _REGENERATE.match(lines[j].strip()) if j < len(lines) else None
    return Figure(base / path, _plain(caption), regen["command"] if regen else ""), (j + 1 if regen else i + 1)


def _table(lines: list[str], i: int, caption: str) -> tuple[Table, int]:
    """A pipe table whose header is line ``i``; the index after it."""
    j, rows = i + 2, []
    while j < len(lines) and lines[j].startswith("|"):
        rows.append([_plain(c) for c in _cells(lines[j])])
        j += 1
    return Table([_plain(h) for h in _cells(lines[i])], rows, caption), j


def _is_table(lines: list[str], i: int) -> bool:
    return lines[i].startswith("|") and i + 1 < len(lines) and bool(re.match(r"^\|[\s:|-]+\|$", lines[i + 1].strip()))


def from_markdown(text: str, base: Path) -> Report:
    """The Report a Markdown page describes (figure paths relative to ``base``)."""
    lines = text.splitlines()
    report = Report(base.name)
    caption: str | None = None  # an italic line: the caption of the table that follows, else a paragraph
    paragraph: list[str] = []

    def flush() -> None:
        nonlocal caption
        if caption is not None:
            report.add(Text(caption))
            caption = None
        if paragraph:
            report.add(Text(_plain(" ".join(paragraph))))
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        heading = re.match(r"^(#{1,6}) (.*)$", line)
        figure = _FIGURE.match(line)
        italic = _CAPTION.match(line)
        if not line.strip():
            if paragraph:
                flush()
            i += 1
        elif line.startswith("```"):
            flush()
            blocks, i = _code(lines, i)
            report.add(*blocks)
        elif heading:
            flush()
            if len(heading[1]) == 1 and not report.blocks:
                report.title = _plain(heading[2])
            else:
                report.add(Heading(_plain(heading[2]), max(2, len(heading[1]))))
            i += 1
        elif figure and (base / figure["path"]).is_file():
            flush()
            fig, i = _figure(lines, i, base, figure["caption"], figure["path"])
            report.add(fig)
        elif _is_table(lines, i):
            if paragraph:
                report.add(Text(_plain(" ".join(paragraph))))
                paragraph.clear()
            table, i = _table(lines, i, caption or "")
            report.add(table)
            caption = None
        elif italic and not paragraph:
            flush()
            caption = _plain(italic["text"])
            i += 1
        else:
            paragraph.append(line.strip())
            i += 1
    flush()
    return report


def redraw_from_results(folder: Path) -> list[Path]:
    """The figures that the per-run rows of ``folder/results.json`` alone determine, drawn again with this
    version's plots (plain log-axis labels): the validation perplexity per strategy. Returns what it drew."""
    import json

    from embtie.reporting import plots

    path = Path(folder) / "results.json"
    if not path.is_file() or not (Path(folder) / "valid_ppl.png").is_file():
        return []
    saved = json.loads(path.read_text(encoding="utf-8"))
    values = {
        n: [r["valid_ppl"] for r in saved["rows"] if r["strategy"] == n and r.get("valid_ppl") is not None]
        for n in saved["strategies"]
    }
    if not any(values.values()):
        return []
    baseline = saved.get("baseline", "tied")
    return [
        plots.metric_by_strategy(values, Path(folder) / "valid_ppl.png", "validation perplexity", baseline, log=True)
    ]


def write_saved_report(folder: Path, source: str, note: str) -> Path:
    """``folder/report.html`` drawn from ``folder/source`` with ``note`` first (the figures that
    results.json determines drawn again first); returns its path."""
    folder = Path(folder)
    redraw_from_results(folder)
    report = from_markdown((folder / source).read_text(encoding="utf-8"), folder)
    report.blocks.insert(0, Text(note))
    page = folder / "report.html"
    page.write_text(to_html(report), encoding="utf-8")
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m embtie.reporting.saved", description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--source", default="report.md", help="the Markdown to draw from (default report.md)")
    parser.add_argument("--note", required=True, help="the note at the top of the page: what it was drawn from")
    args = parser.parse_args(argv)
    for folder in args.folders:
        print(write_saved_report(folder, args.source, args.note))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
