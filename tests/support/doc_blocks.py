"""The runnable parts of the documentation, for tests/docs: the fenced code blocks of README.md and
docs/*.md, the annotation that excuses a block from running, and the examples at the end of every
``embtie CMD --help``.

A block is runnable when its fence names ``bash``, ``sh``, ``shell``, ``console`` (a transcript: ``$ ``
lines are commands, the other lines their output) or ``python``. A block that cannot run on a 2-core CPU
CI machine as written carries, on the line directly above its fence, the visible annotation
``*Not run by the tests: REASON.*``.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN_LANGS = ("bash", "sh", "shell", "console", "python")
ANNOTATION = re.compile(r"^\*Not run by the tests: (?P<reason>.+)\.\*$")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+)\s*(?P<lang>[\w+-]*)")


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository, e.g. "docs/reference.md"
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    reason: str | None  # the annotation's REASON, None when the block runs as written

    @property
    def first_line(self) -> str:
        """The block's first non-empty line without its comment, spaces collapsed: with the file, what names
        the block in the tests' lists."""
        first = next((ln for ln in self.code.splitlines() if ln.strip()), "")
        return " ".join(re.split(r"\s#\s", first, maxsplit=1)[0].split())

    @property
    def key(self) -> tuple[str, str]:
        return (self.path, self.first_line)


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    """Every fenced block of ``path`` (runnable or not), in order."""
    rel = path.relative_to(REPO).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start = m.group("fence"), i
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        above = lines[start - 1].strip() if start > 0 else ""
        a = ANNOTATION.match(above)
        out.append(
            Block(rel, start + 1, m.group("lang").lower(), "\n".join(lines[start + 1 : j]) + "\n", a and a["reason"])
        )
        i = j + 1
    return out


def runnable_blocks() -> list[Block]:
    return [b for p in doc_files() for b in blocks_of(p) if b.lang in RUN_LANGS]


def misplaced_annotations() -> list[str]:
    """Annotations that are not directly above a runnable block's fence (they would excuse nothing)."""
    bad = []
    for p in doc_files():
        lines = p.read_text(encoding="utf-8").splitlines()
        for n, ln in enumerate(lines):
            if ANNOTATION.match(ln):  # an indented one is a code sample, not an annotation
                nxt = FENCE.match(lines[n + 1]) if n + 1 < len(lines) else None
                if not nxt or nxt.group("lang").lower() not in RUN_LANGS:
                    bad.append(f"{p.relative_to(REPO)}:{n + 1}")
    return bad


@functools.cache
def help_text(command: str) -> str:
    """``embtie COMMAND --help`` as a user sees it (computed in this process: no interpreter to start)."""
    from embtie import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli.main([command, "--help"])
    return out.getvalue()


def help_examples(command: str) -> list[str]:
    """The lines under "examples:" at the end of ``embtie COMMAND --help``."""
    out = help_text(command)
    if "\nexamples:\n" not in out:
        return []
    tail = out.split("\nexamples:\n", 1)[1]
    return [ln.strip() for ln in tail.splitlines() if ln.startswith("  ") and ln.strip()]


def console_commands(code: str) -> list[tuple[str, list[str]]]:
    """A transcript -> [(command, the output lines shown after it)]."""
    out: list[tuple[str, list[str]]] = []
    for ln in code.splitlines():
        if ln.startswith("$ "):
            out.append((ln[2:], []))
        elif out and ln.strip():
            out[-1][1].append(ln.strip())
    return out
