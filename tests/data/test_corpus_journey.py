"""Issue 39's journey, timed: on a machine with no ../shared, an empty HOME and a local server standing in
for the internet, `embtie data get ptb`, then a comparison on a raw-text corpus of about 2 MB (Multi30k's
whole English training side: cased, punctuated; not PTB or WikiText) split 90/5/5, reaching verdicts
decided on validation with test verdicts beside them, in bits per byte, within 15 minutes on 2 cores.

Slow (minutes): `.ci/run` runs it after `make test`. Each step's seconds are printed (`pytest -s`). With
EMBTIE_CHEAP=1 in the environment it runs the same commands as a smoke test (3 steps a run) and checks
everything but the decisions."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SHARED, serve_shared

REPO = Path(__file__).resolve().parents[2]
BUDGET_S = 15 * 60
COMPARE = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied,tied-loginit", "--until-decided", "--seeds", "2",
           "--max-seeds", "4", "--metric", "bpb", "--test", "--jobs", "2", "--no-progress", "--out", "runs/journey",
           "data.train_file=corpus/train.txt", "data.valid_file=corpus/valid.txt", "data.test_file=corpus/test.txt",
           "data.vocab_size=4000", "train.lr=0.001", "train.max_steps=100", "train.eval_every=50",
           "train.warmup_steps=10",
           "train.checkpoint_every=100", "train.threads=1"]  # fmt: skip
"""the comparison of the journey: docs/your-corpus.md's command at a budget sized for 15 minutes."""


def _split_corpus(folder: Path) -> int:
    """train/valid/test.txt of Multi30k's English training side, 90/5/5 by line; its size in bytes."""
    with gzip.open(SHARED / "multi30k" / "raw" / "train.en.gz", "rt", encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    n = len(lines)
    folder.mkdir(parents=True)
    parts = {"train": lines[: n * 90 // 100], "valid": lines[n * 90 // 100 : n * 95 // 100],
             "test": lines[n * 95 // 100 :]}  # fmt: skip
    for split, part in parts.items():
        (folder / f"{split}.txt").write_text("".join(part), encoding="utf-8")
    return sum(len(line.encode("utf-8")) for line in lines)


@pytest.mark.slow
@pytest.mark.journey
def test_raw_corpus_to_decided_verdicts_within_15_minutes(server, tmp_path):
    serve_shared(server, "ptb", ("train", "valid"))  # ../shared/data holds no PTB test file to serve
    serve_shared(server, "wordsim", ("eval",))
    checkout = tmp_path / "checkout"  # a checkout with no ../shared beside it
    shutil.copytree(REPO / "src", checkout / "src", ignore=shutil.ignore_patterns("__pycache__"))
    home = tmp_path / "home"
    cheap = os.environ.get("EMBTIE_CHEAP", "")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBTIE_", "XDG_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONPATH=str(checkout / "src"),
               EMBTIE_DATA_MIRROR=server.url, NO_PROXY="127.0.0.1", OMP_NUM_THREADS="1",
               EMBTIE_CHEAP=cheap)  # fmt: skip
    steps: dict[str, float] = {}

    def embtie(step: str, *argv: str) -> subprocess.CompletedProcess:
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "embtie", *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=BUDGET_S)  # fmt: skip
        steps[step] = time.perf_counter() - t0
        assert done.returncode == 0, f"{step}: {done.stderr[-3000:]}"
        return done

    t_all = time.perf_counter()
    embtie("embtie --version", "--version")
    embtie("embtie data get ptb --split train,valid", "data", "get", "ptb", "--split", "train,valid")
    t0 = time.perf_counter()
    size = _split_corpus(tmp_path / "corpus")
    steps["split the corpus 90/5/5"] = time.perf_counter() - t0
    embtie("embtie compare (train, analyse, test, report)", *COMPARE)
    total = time.perf_counter() - t_all
    print(f"\njourney on a {size / 1e6:.1f} MB corpus ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}):")
    for step, seconds in steps.items():
        print(f"  {seconds:7.1f} s  {step}")
    print(f"  {total:7.1f} s  in all (budget {BUDGET_S} s)")

    assert 1.5e6 < size < 2.5e6
    res = json.loads((tmp_path / "runs" / "journey" / "results.json").read_text())
    for metric, table in res["verdicts"].items():  # the answer the journey reached, for the log
        print(f"  {metric}: " + "; ".join(f"{s} {d['verdict']}" for s, d in table["decisions"].items()))
    assert res["metric"] == "valid_bpb" and {"valid_bpb", "test_bpb", "test_ppl"} <= set(res["verdicts"])
    assert res["title"].startswith("corpus/train.txt, BPE subwords of 4,000 pieces")
    if not cheap:
        decided = {s: d["verdict"] for s, d in res["verdicts"]["valid_bpb"]["decisions"].items()}
        assert "undecided" not in decided.values(), decided
        assert total <= BUDGET_S
