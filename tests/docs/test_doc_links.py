"""Every relative link of README.md and docs/*.md resolves: the file or folder exists, and an anchor
(``file.md#heading``) names a heading of that file (GitHub's slugs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_blocks import REPO, doc_files

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```")


def _prose(path: Path) -> str:
    """The file without its fenced code blocks (a link in code is not a link)."""
    out, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", _prose(path), re.MULTILINE)}


def _links() -> list[tuple[str, str]]:
    out = []
    for f in doc_files():
        for target in LINK.findall(_prose(f)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:, file: ...
                out.append((f.relative_to(REPO).as_posix(), target))
    return out


LINKS = _links()


def test_the_docs_have_relative_links():
    assert len(LINKS) >= 30


@pytest.mark.parametrize(("source", "target"), LINKS, ids=[f"{s}->{t}" for s, t in LINKS])
def test_relative_link_resolves(source: str, target: str):
    path_part, _, anchor = target.partition("#")
    base = (REPO / source).parent
    resolved = (base / path_part).resolve() if path_part else (REPO / source).resolve()
    assert resolved.exists(), f"{source}: link {target!r} points at {resolved}, which does not exist"
    if anchor:
        assert resolved.suffix == ".md", f"{source}: anchor on a non-Markdown target {target!r}"
        assert anchor in anchors(resolved), f"{source}: no heading of {path_part or source} has the anchor #{anchor}"


def test_slug():
    assert slug("The theory, checked: `embtie theory`") == "the-theory-checked-embtie-theory"
    assert slug("Documentation that runs") == "documentation-that-runs"
