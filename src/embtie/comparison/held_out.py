"""``embtie compare --test``: every finished run evaluated on the held-out test split, after training, for
test verdicts reported beside the validation ones.

The result of a run is ``RUN_DIR/test.json``: the evaluation's numbers (loss, perplexity, bits per byte
for a language model), the test text it read and the checkpoint it came from (provenance). It is
computed once and again only when the run has a newer checkpoint or another test text is asked for; a
``--test-file`` is keyed by its content (sha256), so a file replaced at the same path is evaluated again.
Nothing here is read while a comparison trains or decides: a sequential design stops on validation
alone (``embtie.comparison.rounds``), and the test numbers only enter the rows of the report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embtie.comparison.grid import PlannedRun
from embtie.files import write_atomic
from embtie.rundir import provenance
from embtie.rundir.digest import file_sha256

TEST_FILE = "test.json"


def stored(run_dir: Path, test_file: str | None = None) -> dict[str, Any] | None:
    """The run's test result when it is current (same test text, newest checkpoint), else None."""
    p = Path(run_dir) / TEST_FILE
    if not p.is_file():
        return None
    try:
        res = json.loads(p.read_text(encoding="utf-8"))
    except ValueError:
        return None
    if not isinstance(res, dict) or res.get("test_file") != test_file:
        return None
    if test_file is not None and res.get("test_file_sha256") != _digest(test_file):
        return None  # the file at that path is not the text the result was computed on
    prov = res.get("provenance")
    if not isinstance(prov, dict) or not isinstance(prov.get("checkpoint"), str):
        return None
    if provenance.stale_reason(Path(run_dir), prov["checkpoint"], str(prov.get("model_sha256"))) is not None:
        return None
    return res


def evaluate(run_dir: Path, test_file: str | None = None, command: str = "embtie compare --test") -> dict[str, Any]:
    """Evaluate the run's newest checkpoint on its test split (or on ``test_file``) and write RUN_DIR/test.json."""
    from embtie.rundir.loading import load_run

    run = load_run(run_dir)
    res = dict(run.task.evaluate(run.model, "test", test_file))
    res["test_file"] = test_file
    res["test_file_sha256"] = None if test_file is None else _digest(test_file)
    res["provenance"] = run.source().to_json(command)
    write_atomic(Path(run_dir) / TEST_FILE, json.dumps(res, indent=1))
    return res


def _digest(test_file: str) -> str | None:
    """The test file's sha256, or None where it cannot be read (evaluating it then names the problem)."""
    try:
        return file_sha256(Path(test_file))
    except OSError:
        return None


def evaluate_all(runs: Sequence[PlannedRun], test_file: str | None = None, progress: bool = True) -> int:
    """``evaluate`` every finished run whose test result is missing or out of date; how many were evaluated."""
    todo = [r for r in runs if r.trained and stored(r.run_dir, test_file) is None]
    for i, r in enumerate(todo, start=1):
        res = evaluate(r.run_dir, test_file)
        if progress:
            bpb = f", {res['bpb']:.4f} bits per byte" if "bpb" in res else ""
            print(f"[test {i}/{len(todo)}] {r.strategy} seed {r.seed}: test ppl {res['ppl']:.2f}{bpb}", flush=True)
    return len(todo)
