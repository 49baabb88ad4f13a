"""Reports as a list of blocks (headings, text, tables, figures) rendered to Markdown and to one
self-contained HTML file (figures inlined as base64 PNG)."""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Text:
    text: str
    """plain text; `code` spans are kept (Markdown) / rendered as <code> (HTML)."""


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class Figure:
    path: Path
    """PNG file, written next to the report."""
    caption: str
    command: str
    """the command that regenerates the figure."""


@dataclass
class Example:
    """One example of a gallery: an image (None: not available here) with labelled lines of text."""

    title: str
    image: Path | None
    lines: list[tuple[str, str]]
    """(label, text) pairs, e.g. (strategy, caption)."""


@dataclass
class Gallery:
    """Examples side by side: images with their texts in the HTML page (thumbnails inlined as base64
    JPEG), the texts alone in Markdown."""

    examples: list[Example]
    caption: str = ""
    thumbnail: int = 224
    """longest side of the inlined images, pixels."""


Block: TypeAlias = Heading | Text | Table | Figure | Gallery
"""One block of a ``Report``."""


@dataclass
class Report:
    title: str
    blocks: list[Block] = field(default_factory=list)

    def add(self, *blocks: Block) -> None:
        self.blocks.extend(blocks)


def fmt(x: float | None, digits: int = 2) -> str:
    """A number for a table: fixed digits, thousands separators for big integers, '-' for missing."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) >= 1000):
        return f"{int(x):,}"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # no "-0.00"


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Report, base: Path) -> str:
    """Markdown text; figure paths relative to ``base`` (the report's folder)."""
    out = [f"# {report.title}", ""]
    for b in report.blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + b.text, ""]
        elif isinstance(b, Text):
            out += [b.text, ""]
        elif isinstance(b, Table):
            if b.caption:
                out += [f"*{b.caption}*", ""]
            out.append("| " + " | ".join(_md_cell(h) for h in b.header) + " |")
            out.append("|" + "|".join("---" for _ in b.header) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
        elif isinstance(b, Gallery):
            if b.caption:
                out += [f"*{b.caption}*", ""]
            for ex in b.examples:
                out.append(f"- **{_md_cell(ex.title)}**" + ("" if ex.image else " (image not available here)"))
                out += [f"  - {_md_cell(label)}: {_md_cell(text)}" for label, text in ex.lines]
            out.append("")
        elif isinstance(b, Figure):
            rel = Path(b.path).resolve().relative_to(base.resolve()) if _inside(b.path, base) else b.path
            out += [f"![{b.caption}]({rel})", "", f"*{b.caption}* Regenerate: `{b.command}`", ""]
    return "\n".join(out).rstrip() + "\n"


def _inside(path: Path, base: Path) -> bool:
    try:
        Path(path).resolve().relative_to(base.resolve())
        return True
    except ValueError:
        return False


def _inline(text: str) -> str:
    """Escape HTML and turn `code` spans into <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{border-bottom:2px solid #ddd;padding-bottom:.3em}h2{margin-top:1.8em;border-bottom:1px solid #eee}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
figure{margin:1em 0 2em}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.9em;color:#444}code{background:#f5f5f5;padding:0 .25em;border-radius:3px}
.caption{font-style:italic;color:#555}
.gallery{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:1em}
.gallery figure{margin:0}.gallery ul{margin:.3em 0;padding-left:1.2em}
"""


def _thumbnail_uri(path: Path, size: int) -> str | None:
    """The image at ``path`` shrunk to at most ``size`` pixels a side, as a data: URI (None if unreadable)."""
    try:
        from PIL import Image
    except ImportError:
        return None
    try:
        with Image.open(path) as opened:
            im = opened.convert("RGB")
            im.thumbnail((size, size))
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=85)
    except OSError:
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _html_gallery(g: Gallery) -> str:
    out = [f'<p class="caption">{_inline(g.caption)}</p>'] if g.caption else []
    out.append('<div class="gallery">')
    for ex in g.examples:
        uri = _thumbnail_uri(Path(ex.image), g.thumbnail) if ex.image else None
        img = f'<img alt="{html.escape(ex.title)}" src="{uri}">' if uri else "<p>(image not available)</p>"
        rows = "".join(f"<li><b>{html.escape(label)}</b>: {html.escape(text)}</li>" for label, text in ex.lines)
        out.append(
            f"<figure>{img}<figcaption><code>{html.escape(ex.title)}</code><ul>{rows}</ul></figcaption></figure>"
        )
    out.append("</div>")
    return "\n".join(out)


def to_html(report: Report) -> str:
    """One self-contained HTML page (CSS inline, PNGs as data: URIs)."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
    ]
    for b in report.blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{html.escape(b.text)}</h{b.level}>")
        elif isinstance(b, Text):
            out.append(f"<p>{_inline(b.text)}</p>")
        elif isinstance(b, Table):
            if b.caption:
                out.append(f'<p class="caption">{_inline(b.caption)}</p>')
            out.append("<table><thead><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in b.header) + "</tr></thead>")
            out.append("<tbody>")
            for row in b.rows:
                out.append("<tr>" + "".join(f"<td>{_inline(str(c))}</td>" for c in row) + "</tr>")
            out.append("</tbody></table>")
        elif isinstance(b, Gallery):
            out.append(_html_gallery(b))
        elif isinstance(b, Figure):
            data = base64.b64encode(Path(b.path).read_bytes()).decode("ascii")
            out.append(
                f'<figure><img alt="{html.escape(b.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{_inline(b.caption)} Regenerate: <code>{html.escape(b.command)}</code>"
                "</figcaption></figure>"
            )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write(report: Report, out_dir: Path, stem: str = "report") -> tuple[Path, Path]:
    """Write ``out_dir/stem.md`` and ``out_dir/stem.html``; returns both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / f"{stem}.md"
    page = out_dir / f"{stem}.html"
    md.write_text(to_markdown(report, out_dir), encoding="utf-8")
    page.write_text(to_html(report), encoding="utf-8")
    return md, page

