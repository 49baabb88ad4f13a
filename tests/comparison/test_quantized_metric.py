"""`embtie compare --metric ppl-int8`: every finished run's validation perplexity with both vocabulary
tables fake-quantized is measured when the comparison is reported, tested with paired seeds like any
metric (perplexity's margin), and measured once per run and checkpoint."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from embtie import cli, metrics
from embtie.analysis.quantized_tables import quantized
from embtie.rundir.loading import load_run
from tiny_runs import TINY_GPT_BODY

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
TINY = [*TINY_GPT_BODY, "train.max_steps=4", "train.eval_every=0", "train.checkpoint_every=0"]


def test_metric_names_of_the_quantized_perplexities():
    assert metrics.chosen("ppl-int8").key == "valid_ppl_int8" and metrics.chosen("ppl-int4").quantized == "int4"
    tested = metrics.BY_KEY
    assert tested["valid_ppl_int8"].margin_key == "valid_ppl" and not tested["valid_ppl_int4"].higher_is_better


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("qcmp") / "cmp"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,l2norm", "--seeds", "2", "--out", str(out),
            "--metric", "ppl-int8", "--analysis", "none", "--no-progress", *TINY]  # fmt: skip
    assert cli.main(argv) == 0
    return out


def test_ppl_int8_decides_and_is_the_quantized_evaluation(compared):
    res = json.loads((compared / "results.json").read_text(encoding="utf-8"))
    assert res["metric"] == "valid_ppl_int8"
    v = res["verdicts"]["valid_ppl_int8"]
    assert v["label"] == "perplexity with int8 tables" and v["margin"] == 1.0 and v["relative"]
    assert set(v["decisions"]) == {"l2norm"} and v["decisions"]["l2norm"]["n"] == 2
    assert "valid_ppl_int4" not in res["verdicts"]  # only the format asked for is measured
    for row in res["rows"]:
        run = Path(row["run_dir"])
        table = json.loads((run / "analysis" / "quantization.json").read_text(encoding="utf-8"))
        assert [(c["format"], c["tables"]) for c in table["cells"]] == [("int8", "both")]
        assert row["valid_ppl_int8"] == table["cells"][0]["ppl"]
        loaded = load_run(run)  # measured again here, independently of the table
        with quantized(loaded.model.sharing, "int8", "both"):
            again = loaded.task.evaluate(loaded.model, "valid")
        assert again["ppl"] == row["valid_ppl_int8"] and row["valid_ppl_int8"] != row["valid_ppl"]
    md = (compared / "report.md").read_text(encoding="utf-8")
    assert "Baseline `tied`: perplexity with int8 tables" in md
    assert "perplexity with int8 tables (lower is better)" in md


def test_report_again_measures_nothing(compared, capsys):
    stamps = {p: p.stat().st_mtime_ns for p in compared.glob("runs/*/*/analysis/quantization.json")}
    assert len(stamps) == 4
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,l2norm", "--seeds", "2", "--out", str(compared),
            "--metric", "ppl-int8", "--analysis", "none", "--no-progress", "--report-only", *TINY]  # fmt: skip
    assert cli.main(argv) == 0
    assert "[quantized int8]" not in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in compared.glob("runs/*/*/analysis/quantization.json")} == stamps
    rows = json.loads((compared / "results.json").read_text(encoding="utf-8"))["rows"]
    assert all(math.isfinite(r["valid_ppl_int8"]) for r in rows)
