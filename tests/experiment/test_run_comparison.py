"""embtie.experiment: a comparison from Python returns what `embtie compare` writes and prints; the request
refuses what the command refuses, in the same line."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from embtie import cli, sharing
from embtie.commands.compare import request_of
from embtie.errors import ConfigError
from embtie.experiment import ComparisonRequest, run_comparison, run_ladder

STORED = Path(__file__).resolve().parents[1] / "fixtures" / "report_regen" / "lm"
"""a finished LM comparison (3 strategies x 2 seeds, trained by the code before this layout)."""


def _stored_request(out: Path) -> ComparisonRequest:
    """The request of the stored comparison's own command, reporting its runs (copied to ``out``)."""
    command = json.loads((STORED / "results.json").read_text(encoding="utf-8"))["command"]
    args, extra = cli.build_parser().parse_known_args(shlex.split(command)[1:])
    args.args.extend(extra)  # as embtie's main does with overrides after options
    shutil.copytree(STORED, out)
    for f in out.iterdir():  # what a comparison writes (update_dynamics.json stays: the runs keep no checkpoint)
        if f.suffix in (".md", ".html", ".csv", ".png") or f.name == "results.json":
            f.unlink()
    request = request_of(args)
    request.out, request.report_only, request.progress = out, True, False
    return request


def test_a_comparison_from_python_returns_its_runs_verdicts_and_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the stored runs name their folders from here, as the report test redraws them
    stored = json.loads((STORED / "results.json").read_text(encoding="utf-8"))
    said: list[str] = []
    r = run_comparison(_stored_request(Path("lm")), log=said.append)
    assert r.status == 0 and said == r.lines
    assert said[0].startswith("compared 3 strategies x 2 seeds in ")
    grid = [(s, k) for s in ["l2norm", "tied", "untied"] for k in [0, 1]]
    assert sorted((p.strategy, p.seed) for p in r.runs) == grid
    assert r.comparison is not None and len(r.comparison.rows) == 6
    # the verdicts are the stored comparison's, recomputed from its runs
    assert {m: {s: d["verdict"] for s, d in v.decisions.items()} for m, v in r.verdicts.items()} == {
        m: {s: d["verdict"] for s, d in v["decisions"].items()} for m, v in stored["verdicts"].items()
    }
    assert r.choice is not None and sorted(r.choice["candidates"]) == ["l2norm", "tied", "untied"]
    for path in (r.report_md, r.report_html, r.results_csv, r.results_json):
        assert path is not None and path.is_file() and path.parent == Path("lm")
    assert json.loads(r.results_json.read_text())["rows"] == json.loads((STORED / "results.json").read_text())["rows"]


def test_all_means_every_registered_strategy():
    args = cli.build_parser().parse_args(["compare", "ptb-gpt-tiny", "--strategies", "all"])
    spec = request_of(args).to_spec()
    assert spec.strategies == sharing.names() and len(spec.strategies) == 16
    assert ComparisonRequest("ptb-gpt-tiny", strategies=["tied", "u2=untied:train.lr=0.002"]).to_spec().strategies == [
        "tied",
        "u2",
    ]


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        (ComparisonRequest("ptb-gpt-tiny", max_seeds=6), "--max-seeds 6 is an option of --until-decided"),
        (ComparisonRequest("ptb-gpt-tiny", seeds=0), r"--seeds 0 must be >= 1"),
        (ComparisonRequest("ptb-gpt-tiny", seeds=5000), "--seeds 5000 is too large: give at most 1,000"),
        (ComparisonRequest("ptb-gpt-tiny", match="params", match_tolerance=1.5), r"--match-tolerance 1.5 must be in"),
        (ComparisonRequest("ptb-gpt-tiny", ["seed=3"]), "'seed=3' has no effect in a comparison"),
        (ComparisonRequest("ptb-gpt-tiny", baseline="untied", strategies="tied,l2norm"), "--baseline 'untied' is not"),
        (ComparisonRequest("ptb-gpt-tiny", dry_run=True, report_only=True), "--dry-run trains nothing"),
        (ComparisonRequest("ptb-gpt-tiny", ladder="size=xs,s"), "run it with embtie.experiment.run_ladder"),
    ],
)
def test_a_request_is_refused_in_one_line_before_anything_is_written(tmp_path, request_, said):
    request_.out = tmp_path / "out"
    with pytest.raises(ConfigError, match=said):
        run_comparison(request_, log=lambda line: None)
    assert not request_.out.exists()


def test_a_ladder_needs_its_values_and_a_preset(tmp_path):
    with pytest.raises(ConfigError, match="a ladder needs ladder="):
        run_ladder(ComparisonRequest("ptb-gpt-tiny", out=tmp_path / "l"))
    with pytest.raises(ConfigError, match="--ladder needs a preset"):
        run_ladder(ComparisonRequest(ladder="size=xs,s", out=tmp_path / "l"))
