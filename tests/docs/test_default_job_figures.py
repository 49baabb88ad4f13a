# ruff: noqa: E501  (one line per quoted figure: the table reads as a list)
"""Every figure that results/default-job/README.md, README.md's default-job section and docs/your-corpus.md quote is re-computed
from the files they cite: noise/runs.csv and noise/curves.csv (the measurement), simulation.json (itself
re-computed here by bench/sim.py, exactly), and make-run/ (the job's own output). noise/noise.md must be
what bench/noise.py writes from the CSV files today."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from bench import job_noise_report as noise
from bench import job_simulation as sim
from embtie.comparison import DEFAULT_JOB_SEEDS, DEFAULT_STRATEGIES
from embtie.decisions.power import seeds_to_decide

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "results" / "default-job"
JOB_README = "results/default-job/README.md"
README = "README.md"
YOUR_CORPUS = "docs/your-corpus.md"


@cache
def document(name: str) -> str:
    """The document with Unicode minus signs read as ASCII ones."""
    return (ROOT / name).read_text(encoding="utf-8").replace("−", "-")


@cache
def table() -> dict:
    return noise.ppl_table(noise._read("runs.csv"))


def said(variant: str, strategy: str) -> str:
    decisions = noise.variant_decisions(table(), "job", DEFAULT_STRATEGIES, DEFAULT_JOB_SEEDS)
    return noise._said(decisions[("AMD EPYC", variant)][strategy])


def pooled(strategy: str) -> dict[str, float]:
    return noise.paired_summary(table(), "job", strategy)


def tied_seed0(setting: str, variant: str) -> float:
    return table()[(setting, "AMD EPYC", variant, 0)]["tied"]


def loss_gap(setting: str, strategy: str, step: int) -> float:
    """|native - avx2| of seed 0's validation loss at ``step``."""
    rows = noise._read("curves.csv")
    got = {r["variant"]: float(r["valid_loss"]) for r in rows
           if r["setting"] == setting and r["strategy"] == strategy and r["seed"] == "0" and int(r["step"]) == step}  # fmt: skip
    return abs(got["native"] - got["avx2"])


def means_move() -> float:
    """The largest difference between numerics variants of a strategy's mean paired difference, over the
    job's own 5 seeds (the verdict table's means)."""
    decisions = noise.variant_decisions(table(), "job", DEFAULT_STRATEGIES, DEFAULT_JOB_SEEDS)
    means = {s: [ds[s].mean for ds in decisions.values()] for s in DEFAULT_STRATEGIES[1:]}
    return max(max(m) - min(m) for m in means.values())


def simulation() -> dict:
    return json.loads((HERE / "simulation.json").read_text(encoding="utf-8"))


def make_run_seconds() -> int:
    match = re.search(r"compared 3 strategies x 5 seeds in (\d+) s", (HERE / "make-run" / "make-run.log").read_text())
    assert match is not None
    return int(match[1])


def make_run_value(strategy: str, seed: int) -> float:
    """The job's own run's final perplexity; asserts the measurement's native run of that seed rounds the same."""
    import csv

    with open(HERE / "make-run" / "results.csv", encoding="utf-8") as f:
        mine = next(float(r["valid_ppl"]) for r in csv.DictReader(f) if r["strategy"] == strategy and int(r["seed"]) == seed)
    native = table()[("job", "AMD EPYC", "native", seed)][strategy]
    assert f"{mine:.4f}" == f"{native:.4f}", (mine, native)
    return mine


FIGURES: list[tuple[str, str, object]] = [
    (JOB_README, "| AMD EPYC | native | {} | {} |", lambda: (said("native", "untied"), said("native", "tied-loginit"))),
    (JOB_README, "| AMD EPYC | avx2 | {} | {} |", lambda: (said("avx2", "untied"), said("avx2", "tied-loginit"))),
    (JOB_README, "| AMD EPYC | default | {} | {} |", lambda: (said("default", "untied"), said("default", "tied-loginit"))),
    (JOB_README, "by up to {:.2f} points", lambda: (means_move(),)),
    (JOB_README, "{:.1f} (native), {:.1f} (avx2) and {:.1f} (default)", lambda: (tied_seed0("base", "native"), tied_seed0("base", "avx2"), tied_seed0("base", "default"))),
    (JOB_README, "a spread of\n   {:.1f}%", lambda: (100 * (tied_seed0("base", "native") / tied_seed0("base", "default") - 1),)),
    (JOB_README, "already {:.2f} nats apart at step 50", lambda: (loss_gap("base", "tied", 50),)),
    (JOB_README, "and {:.2f} apart at step 300, while untied's stay within 0.003", lambda: (loss_gap("base", "tied", 300),)),
    (JOB_README, "seed moves by {:.2f}%", lambda: (noise.machine_spread(table(), "lr1e-3", "tied")["max"],)),
    (JOB_README, "largest spread of one tied seed is {:.2f}%", lambda: (noise.machine_spread(table(), "job", "tied")["max"],)),
    (JOB_README, "untied {:.2f}% (sd of the\n   paired difference {:.2f}%), tied-loginit {:.2f}% (sd {:.2f}%)", lambda: (pooled("untied")["mean"], pooled("untied")["sd"], pooled("tied-loginit")["mean"], pooled("tied-loginit")["sd"])),
    (JOB_README, "untied's sd from {:.2f}% at step 50 to {:.2f}% at step 250", lambda: (noise.sd_by_step(noise._read("curves.csv"), "job", "untied")[50][2], noise.sd_by_step(noise._read("curves.csv"), "job", "untied")[250][2])),
    (JOB_README, "within {:.2f}% of tied with a paired\n   spread of {:.2f}%", lambda: (-pooled("l2norm")["mean"], pooled("l2norm")["sd"])),
    (JOB_README, "would take about {} paired seeds", lambda: (seeds_to_decide(pooled("l2norm")["mean"], pooled("l2norm")["sd"], 1.0, 0.05),)),
    (JOB_README, "({:.2f}%, sd {:.2f}%, 6 pairs)", lambda: (pooled("tied-shuffle")["mean"], pooled("tied-shuffle")["sd"])),
    (JOB_README, "over all 18 pairs its spread is the same\n   ({:.2f}%)", lambda: (pooled("tied-loginit")["sd"],)),
    (JOB_README, "on {} comparisons", lambda: (simulation()["trials"],)),
    (JOB_README, "| bootstrap of the measured seeds | {:.2f} | {:.2f} |", lambda: (simulation()["methods"]["bootstrap"]["all_decided"], simulation()["methods"]["bootstrap"]["same_on_two_machines"])),
    (JOB_README, "| normal fit of their log-perplexities | {:.2f} | {:.2f} |", lambda: (simulation()["methods"]["normal"]["all_decided"], simulation()["methods"]["normal"]["same_on_two_machines"])),
    (JOB_README, "| the same, every deviation doubled | {:.2f} | {:.2f} |", lambda: (simulation()["methods"]["normal, spread x2"]["all_decided"], simulation()["methods"]["normal, spread x2"]["same_on_two_machines"])),
    (JOB_README, "took {} s from `make run`", lambda: (make_run_seconds(),)),
    (JOB_README, "untied seed 1 ends at {:.4f} in both", lambda: (make_run_value("untied", 1),)),
    (README, "untied is **better** than tied ({}) and tied-loginit is **better** than tied ({})", lambda: (said("native", "untied").split(", ", 1)[1], said("native", "tied-loginit").split(", ", 1)[1])),
    (README, "pooled over them, the paired differences are {:.2f}% and {:.2f}%,", lambda: (pooled("untied")["mean"], pooled("tied-loginit")["mean"])),
    (README, "a variant's mean moves by at most {:.2f} points", lambda: (means_move(),)),
    (README, "{} s on this project's 2-core machine", lambda: (make_run_seconds(),)),
    (YOUR_CORPUS, "within {:.2f}% of tied at the\n  default job's budget; deciding it would take about {} paired seeds", lambda: (-pooled("l2norm")["mean"], seeds_to_decide(pooled("l2norm")["mean"], pooled("l2norm")["sd"], 1.0, 0.05))),
]


@pytest.mark.parametrize("doc,phrase,values", FIGURES, ids=[f"{d}:{p[:40]}" for d, p, _ in FIGURES])
def test_quoted_figure_is_recomputed(doc, phrase, values):
    text = phrase.format(*values()).replace("−", "-")  # type: ignore[operator]
    assert text in document(doc), f"{doc} should say: {text!r}"


def test_noise_md_is_what_the_csv_files_give():
    assert (HERE / "noise" / "noise.md").read_text(encoding="utf-8") == noise.markdown()


def test_simulation_json_is_recomputed_exactly():
    assert sim.run(sim.DEFAULT_JOB_SETTING, HERE / "noise" / "runs.csv") == simulation()


def test_every_variant_gives_the_same_verdicts():
    decisions = noise.variant_decisions(table(), "job", DEFAULT_STRATEGIES, DEFAULT_JOB_SEEDS)
    assert len(decisions) >= 3
    verdicts = {key: {k: d.verdict for k, d in ds.items()} for key, ds in decisions.items()}
    assert all(v == {"untied": "better", "tied-loginit": "better"} for v in verdicts.values()), verdicts
