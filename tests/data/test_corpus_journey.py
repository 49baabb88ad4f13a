"""The documented path, timed (issues 39 and 52): docs/your-corpus.md's sections 1 to 3, their blocks taken
from the page and run as it prints them, on a raw corpus of about 2 MB (Multi30k's whole English training
side: cased, punctuated; not PTB or WikiText), on a machine with no ../shared, no data root, an empty HOME
and no word-similarity files: from the split to the verdicts decided on validation, test verdicts beside
them, in bits per byte, within 15 minutes on 2 cores.

Slow (minutes): `.ci/run` runs it after `make test` (`make test-journey`). Each step's seconds are printed
(`pytest -s`). With EMBTIE_CHEAP=1 in the environment it runs the same blocks as a smoke test (3 steps a
run) and checks everything but the decisions and the time."""

from __future__ import annotations

import gzip
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SHARED
from doc_blocks import Block, blocks_of

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "your-corpus.md"
JOURNEY = ("## 1. ", "## 2. ", "## 3. ")
"""the sections of docs/your-corpus.md that lead from a user's text to the answer: the journey runs theirs."""
BUDGET_S = 15 * 60
HANG_S = 3 * BUDGET_S
"""a step still running after this long is stuck: killed, and the test fails (the budget is checked on the
total, after the steps, so that a slow machine still shows how far over it is)."""


def journey_blocks() -> list[Block]:
    """The shell blocks of the journey's sections of docs/your-corpus.md, in order, as the page prints them."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    section = {}
    current = ""
    for n, line in enumerate(lines, 1):
        current = line if line.startswith("## ") else current
        section[n] = current
    return [b for b in blocks_of(DOC) if b.lang == "bash" and section[b.line].startswith(JOURNEY)]


def _all_txt(folder: Path) -> int:
    """all.txt, the user's text of section 1: Multi30k's whole English training side; its size in bytes."""
    with gzip.open(SHARED / "multi30k" / "raw" / "train.en.gz", "rt", encoding="utf-8") as f:
        text = f.read()
    (folder / "all.txt").write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: on a shared machine, what the
    journey itself cost beside its wall time."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def test_the_journey_is_the_pages_three_sections():
    """Section 1 splits, section 2 compares, section 3 reads: a block added or lost there changes the journey."""
    blocks = journey_blocks()
    assert [b.first_line.split()[0] for b in blocks] == ["mkdir", "embtie", "head"]
    assert "--until-decided" in blocks[1].code and "--test" in blocks[1].code and "--metric bpb" in blocks[1].code


@pytest.mark.slow
@pytest.mark.journey
def test_your_corpus_md_runs_as_printed_to_decided_verdicts_within_15_minutes(tmp_path):
    checkout = tmp_path / "checkout"  # a checkout with no ../shared beside it
    shutil.copytree(REPO / "src", checkout / "src", ignore=shutil.ignore_patterns("__pycache__"))
    home, work, bin_dir = tmp_path / "home", tmp_path / "work", tmp_path / "bin"
    for d in (home, work, bin_dir):
        d.mkdir()
    (bin_dir / "embtie").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m embtie "$@"\n')
    (bin_dir / "embtie").chmod(0o755)
    cheap = os.environ.get("EMBTIE_CHEAP", "")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBTIE_", "XDG_", "PYTEST_"))}
    env.update(HOME=str(home), PYTHONPATH=str(checkout / "src"), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               OMP_NUM_THREADS="1", EMBTIE_CHEAP=cheap)  # fmt: skip
    steps: dict[str, float] = {}
    cpu: dict[str, float] = {}
    printed: dict[str, str] = {}

    def run(step: str, code: str) -> None:
        t0, cpu0 = time.perf_counter(), _children_cpu()
        done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + code], cwd=work, env=env, capture_output=True,
                              text=True, timeout=HANG_S)  # fmt: skip
        steps[step] = time.perf_counter() - t0
        cpu[step] = _children_cpu() - cpu0
        assert done.returncode == 0, f"{step} (exit {done.returncode}):\n{code}\n{done.stderr[-3000:]}"
        printed[step] = done.stdout

    t_all = time.perf_counter()
    run("embtie --version", "embtie --version")
    t0 = time.perf_counter()
    size = _all_txt(work)
    steps["write all.txt (the user's text)"] = time.perf_counter() - t0
    for block in journey_blocks():
        run(f"docs/your-corpus.md:{block.line}: {block.first_line[:60]}", block.code)
    total = time.perf_counter() - t_all
    print(f"\njourney on a {size / 1e6:.1f} MB corpus ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}):")
    for step, seconds in steps.items():
        print(f"  {seconds:7.1f} s  {step}" + (f" (CPU {cpu[step]:.0f} s)" if step in cpu else ""))
    print(f"  {total:7.1f} s  in all (budget {BUDGET_S} s; CPU {sum(cpu.values()):.0f} s of its processes)")

    assert 1.5e6 < size < 2.5e6
    assert not (checkout.parent / "shared").exists() and not (home / ".cache" / "embtie" / "data" / "wordsim").exists()
    out = work / "runs" / "my-corpus"
    res = json.loads((out / "results.json").read_text())
    for metric, table in res["verdicts"].items():  # the answer the journey reached, for the log
        print(f"  {metric}: " + "; ".join(f"{s} {d['verdict']}" for s, d in table["decisions"].items()))
    assert res["metric"] == "valid_bpb" and {"valid_bpb", "test_bpb", "test_ppl"} <= set(res["verdicts"])
    assert set(res["verdicts"]["valid_bpb"]["decisions"]) == {"untied", "l2norm"}
    assert res["title"].startswith("my-corpus/train.txt, BPE subwords of 4,000 pieces")
    read = list(printed.values())[-1]  # section 3's output: the report's head, the answer, the count of test results
    assert read.startswith("# ") and re.search(r"^\d+$", read.strip().splitlines()[-1], re.M)
    assert "Which to use: " in read and res["verdicts"]["valid_bpb"]["choice"]["sentence"] in read
    compared = next(out for step, out in printed.items() if "embtie compare" in step).strip().splitlines()
    assert compared[-2].startswith("Which to use: ") and compared[-1].startswith(("confirmatory: ", "exploratory: "))
    if not cheap:  # 200 steps: the full analysis, whose word similarity BPE pieces skip
        assert "Word similarity skipped: the output vocabulary is not English words" in (out / "report.md").read_text()
        decided = {s: d["verdict"] for s, d in res["verdicts"]["valid_bpb"]["decisions"].items()}
        assert decided["untied"] != "undecided", decided
        assert total <= BUDGET_S
