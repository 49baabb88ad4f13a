"""The default job (`embtie compare` with no preset, what `make run` runs) is the design
results/default-job/README.md justifies: tied / untied / tied-loginit, 5 paired seeds, 300 steps at peak
learning rate 1e-3, the whole validation set, one thread per run."""

from __future__ import annotations

from embtie import cli, comparison
from embtie.config import load_config


def test_the_default_job_plans_what_its_design_says(tmp_path, capsys):
    assert cli.main(["compare", "--dry-run", "--out", str(tmp_path / "dj")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("plan: 15 runs")
    planned = {(line.split("\t")[0], line.split("\t")[1]) for line in lines[1:]}
    assert planned == {(s, f"seed {i}") for s in ("tied", "untied", "tied-loginit") for i in range(5)}
    assert not (tmp_path / "dj").exists()


def test_the_default_job_trains_at_the_stable_learning_rate_on_the_whole_validation_set():
    cfg = load_config(comparison.DEFAULT_PRESET, list(comparison.DEFAULT_OVERRIDES))
    assert (cfg.train.lr, cfg.train.max_steps, cfg.train.threads) == (0.001, 300, 1)
    assert cfg.data.valid_tokens is None  # type: ignore[attr-defined]
    preset = load_config(comparison.DEFAULT_PRESET, [])
    assert preset.train.lr == 0.003  # the preset itself keeps its rate: other work refers to it
    assert comparison.DEFAULT_JOB_DESIGN.looks == (comparison.DEFAULT_JOB_SEEDS,)
    assert comparison.DEFAULT_JOB_DESIGN.alpha_per_look == 0.05
