"""`embtie compare` ends with the answer to "which should I use?" (issue 52): three strategies where one
is clearly best (the others are trained at a learning rate too small to learn in the budget), the choice
decided over all pairs in one family, in results.json, in the Summary's first line and as the command's
last printed line; the design file is written before the first run, another design in the same folder is
refused in one line, and the report says confirmatory."""

from __future__ import annotations

import json

from embtie import cli
from tiny_runs import TINY_GPT_BODY

TINY = [*TINY_GPT_BODY, "train.max_steps=12", "train.eval_every=6", "train.eval_batches=2", "train.checkpoint_every=0"]
STRATEGIES = "tied,slow=tied:train.lr=1e-6,stalled=tied:train.lr=1e-7"


def _argv(out, *extra: str, seeds: int = 3) -> list[str]:
    return ["compare", "ptb-gpt-tiny", "--strategies", STRATEGIES, "--seeds", str(seeds), "--margin", "valid_ppl=1%",
            "--out", str(out), "--no-progress", *extra, *TINY]  # fmt: skip


def test_a_clear_best_is_the_decided_choice_and_the_last_line(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert cli.main(_argv(out)) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    res = json.loads((out / "results.json").read_text())
    v = res["verdicts"]["valid_ppl"]
    assert v["role"] == "primary" and res["decision_rule"] == "one-family"
    choice = v["choice"]
    assert choice["decided"] and choice["use"] == ["tied"]
    assert set(choice["pairs"]) == {"slow vs tied", "stalled vs tied", "stalled vs slow"}
    assert {v["decisions"][k]["verdict"] for k in ("slow", "stalled")} == {"worse"}
    assert choice["sentence"].startswith("use `tied`: better than `slow` and `stalled` on perplexity, decided at 3")
    md = (out / "report.md").read_text()
    summary = md.split("## Summary", 1)[1]
    assert summary.index("Which to use: use `tied`") < summary.index("Baseline `tied`")
    assert "confirmatory: design " in summary and "before the first of its 9 runs" in summary
    assert printed[-2].startswith("Which to use: use tied: better than slow and stalled")
    assert printed[-1].startswith("confirmatory: design ")
    design = json.loads((out / "design.json").read_text())
    written = design["design"]["strategies"]  # as --strategies writes them, values read as numbers
    assert design["runs_before"] == 0 and written[0] == "tied" and written[2] == "stalled=tied:train.lr=1e-07"
    record = json.loads((out / "design-runs.json").read_text())["runs/slow/seed2"]
    assert record["design"] == design["hash"] and record["started_at"] >= design["fixed_at"]
    # another design in the same folder: one line, nothing trained
    assert cli.main(_argv(out, seeds=4)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another design" in err[0] and design["hash"] in err[0]
    # the same folder reported against another baseline: an exploratory family, said so
    assert cli.main([*_argv(out), "--baseline", "slow", "--report-only"]) == 0
    md = (out / "report.md").read_text()
    assert "exploratory: this report's tests (baseline" in md
