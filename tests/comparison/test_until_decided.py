"""`embtie compare --until-decided`: seeds are added in rounds until every strategy is decided on the
primary metric or the last look is reached; decided strategies stop; the verdicts and the rounds are
replayed from the runs on disk (``--report-only`` reproduces them); the report states the design."""

from __future__ import annotations

import json

from embtie import cli
from tiny_runs import TINY_GPT_BODY

TINY = [*TINY_GPT_BODY, "train.max_steps=12", "train.eval_every=6", "train.eval_batches=2", "train.checkpoint_every=0"]


def _compare(out, margin: str, *extra: str) -> dict:
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied,l2norm", "--until-decided", "--seeds", "3",
            "--max-seeds", "4", "--seeds-per-round", "1", "--margin", margin, "--out", str(out), "--no-progress",
            *extra, *TINY]  # fmt: skip
    assert cli.main(argv) == 0
    return json.loads((out / "results.json").read_text())


def _seeds(res: dict) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for r in res["rows"]:
        out.setdefault(r["strategy"], []).append(r["seed"])
    return {k: sorted(v) for k, v in out.items()}


def test_rounds_stop_decided_strategies_and_replay_from_disk(tmp_path):
    out = tmp_path / "cmp"
    # a wide margin: every strategy is equivalent to tied at its first look that can show it
    res = _compare(out, "valid_ppl=50%")
    v = res["verdicts"]["valid_ppl"]
    assert v["margin"] == 50 and v["relative"] and "looks at 3, 4 seeds" in v["design"]
    seeds = _seeds(res)
    assert seeds["tied"] == [0, 1, 2, 3][: max(len(s) for s in seeds.values())]
    for name in ("untied", "l2norm"):
        d = v["decisions"][name]
        # a strategy trains on while one of its pairs is undecided: at least the seeds of its verdict's look
        assert len(seeds[name]) >= d["n"] and d["verdict"] in ("equivalent", "undecided")
    assert any(d["verdict"] == "equivalent" for d in v["decisions"].values())
    choice = v["choice"]  # the rounds stop when the choice among the three is decided, or at the last look
    last = max(len(s) for s in seeds.values())
    assert choice["decided"] or last == 4
    if choice["decided"]:
        assert all(p["n"] <= last for p in choice["pairs"].values()) and "equivalent within ±50%" in choice["sentence"]
    # the report redrawn from disk alone sees the same rounds and verdicts
    before = (out / "results.json").read_text()
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied,l2norm", "--until-decided", "--seeds", "3",
            "--max-seeds", "4", "--seeds-per-round", "1", "--margin", "valid_ppl=50%", "--out", str(out),
            "--no-progress", "--report-only", *TINY]  # fmt: skip
    assert cli.main(argv) == 0
    assert (out / "results.json").read_text() == before
    md = (out / "report.md").read_text()
    assert "## Verdicts: paired seeds and margins of equivalence" in md and "Bonferroni over looks" in md
    assert "--until-decided --max-seeds 4 --seeds-per-round 1 --margin valid_ppl=50%" in md


def test_a_tight_margin_leaves_them_undecided_at_the_last_look_with_the_seeds_needed(tmp_path):
    res = _compare(tmp_path / "cmp", "valid_ppl=0.001%")
    seeds = _seeds(res)
    assert all(s == [0, 1, 2, 3] for s in seeds.values())
    for d in res["verdicts"]["valid_ppl"]["decisions"].values():
        if d["verdict"] == "undecided":
            assert d["n"] == 4 and (d["seeds_needed"] is None or d["seeds_needed"] > 4)
        else:
            assert d["verdict"] in ("better", "worse")
