"""Where things live: results/ holds results (data, figures, notes; the scripts that make or check them are
in bench/), and no code, script, test or document names the folder of one checkout or of one virtual
environment (a path that works on one machine only). Logs of GPU runs keep what the machine printed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE_SUFFIXES = {".py", ".sh", ".bash", ".ipynb"}
SCANNED = ["src", "bench", "tests", "docs"]
TEXT_SUFFIXES = {".py", ".sh", ".md", ".yaml", ".toml", ".txt"}
MACHINE_PATH = re.compile("/" + "work/|/[^\\s'\"`]*" + r"\.venv/bin")
"""a checkout's absolute folder or a path into one virtual environment (built from parts: this file is scanned)."""


def test_results_hold_no_code():
    code = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "results").rglob("*") if p.suffix in CODE_SUFFIXES)
    assert code == [], f"scripts under results/ (move them to bench/): {code}"


def test_the_machine_path_pattern_finds_planted_paths():
    venv = ".venv" + "/bin"
    assert MACHINE_PATH.search("PY=" + "/work" + f"/main/{venv}/python")
    assert MACHINE_PATH.search(f'PY="$ROOT/{venv}/python"')
    assert not MACHINE_PATH.search("python -m venv .venv && . .venv/bin/activate")  # the user's own environment
    assert not MACHINE_PATH.search("EMBTIE_DATA=../shared/data")


def test_no_file_names_a_checkout_or_a_virtual_environment():
    found = []
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*")):
            if p.suffix not in TEXT_SUFFIXES or not p.is_file() or "fixtures" in p.parts:
                continue
            for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if MACHINE_PATH.search(line):
                    found.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    assert found == [], "paths of one machine:\n" + "\n".join(found)
