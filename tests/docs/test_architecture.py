"""docs/architecture.md follows the code: every room of its tree exists, every module a room's description
names (``name (what it holds)``, ``name.py``, ``name/ (...)``) is a module or subpackage of that room, and
every dotted name (``comparison.grid.check_reused``, ``embtie.hf.export``) resolves to a module or to an
attribute of one."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "embtie"
DOC = ROOT / "docs" / "architecture.md"

ROOM = re.compile(r"^[│ ]*(?:├──|└──)\s+(?P<names>[\w./, ]+?)\s{2,}(?P<text>.*)$")
"""a row of the tree that opens a room: its names (``sharing/``, ``cli.py, commands/``) and description."""
NAMED_MODULE = re.compile(r"(?:^|[\s,;:(])(?P<name>[a-z][a-z0-9_]*)(?P<kind>\.py|/)?(?= \()")
"""``name (...)``, ``name.py (...)`` or ``name/ (...)``: a module (or subpackage) named with what it holds."""
FILE_NAME = re.compile(r"(?:^|[\s,;:(])(?P<name>[a-z][a-z0-9_]*)\.py\b")
DOTTED = re.compile(r"(?<![\w./-])(?P<name>(?:embtie\.)?[a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?![\w/-])")
"""``a.b`` or ``a.b.c``: checked when ``a`` is embtie or one of its top-level modules."""
FILE_SUFFIXES = {"py", "yaml", "json", "jsonl", "md", "csv", "png", "npz", "html"}
"""``files.py``, ``config.yaml``: file names, not dotted names."""


def _tree() -> list[tuple[str, str]]:
    """(room, description) per room of the tree, a room's continuation lines joined to its description;
    room is the path under src/embtie (``comparison``, ``tasks/lm``) or '' for the top-level files."""
    lines = DOC.read_text(encoding="utf-8").split("```text", 1)[1].split("```", 1)[0].splitlines()
    rooms: list[tuple[str, str]] = []
    parent = ""
    for line in lines[1:]:
        m = ROOM.match(line)
        if m:
            names = [n.strip() for n in m["names"].split(",")]
            depth = line.index(m["names"]) // 4 - 1
            dirs = [n.rstrip("/") for n in names if n.endswith("/")]
            room = dirs[0] if dirs and len(names) == 1 else ""
            if depth == 0:
                parent = room
            else:
                room = f"{parent}/{room}"
            rooms.append((room, m["text"]))
            for n in names:
                assert (PKG / (f"{parent}/{n}" if depth else n).rstrip("/")).exists(), f"the tree names {n}: absent"
        elif rooms and line.strip("│ "):
            rooms[-1] = (rooms[-1][0], rooms[-1][1] + " " + line.strip("│ ").strip())
    return rooms


def test_the_tree_is_read():
    rooms = dict(_tree())
    assert {"sharing", "comparison", "tasks/lm", "hf"} <= set(rooms)
    assert "grid" in {m["name"] for m in NAMED_MODULE.finditer(rooms["comparison"])}


@pytest.mark.parametrize("room, text", [r for r in _tree() if r[0]], ids=lambda r: r if isinstance(r, str) else "")
def test_every_module_a_room_names_exists(room: str, text: str):
    named = {m["name"] for m in NAMED_MODULE.finditer(text)} | {m["name"] for m in FILE_NAME.finditer(text)}
    missing = sorted(n for n in named if not ((PKG / room / f"{n}.py").is_file() or (PKG / room / n).is_dir()))
    assert not missing, f"docs/architecture.md names modules of {room}/ that do not exist: {missing}"


def _resolves(dotted: str) -> bool:
    """Whether ``embtie.<dotted>`` is a module or an attribute of one (a function, class or constant)."""
    parts = dotted.removeprefix("embtie.").split(".")
    for i in range(len(parts), -1, -1):
        try:
            obj = importlib.import_module(".".join(["embtie", *parts[:i]]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_dotted_name_resolves():
    top = {p.stem for p in PKG.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file() or p.is_dir()}
    text = DOC.read_text(encoding="utf-8")
    names = {n for m in DOTTED.finditer(text) if (n := m["name"]).split(".")[0] in top | {"embtie"}
             and n.rpartition(".")[2] not in FILE_SUFFIXES}  # fmt: skip
    assert len(names) > 10
    broken = sorted(n for n in names if not _resolves(n))
    assert not broken, f"docs/architecture.md names what does not resolve: {broken}"
