"""Where the default job's noise comes from, from the runs in results/default-job/noise/runs.csv and
noise/curves.csv (``python -m bench.job_noise``): writes results/default-job/noise/noise.md.

    python -m bench.job_noise_report

Every figure is a function of the two CSV files (tests/docs/test_default_job_figures.py recomputes the ones
the READMEs quote). Percentages are paired: 100 (strategy / tied - 1) for the same seed, setting,
variant and CPU.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from pathlib import Path

from embtie.comparison import DEFAULT_JOB_SEEDS, DEFAULT_STRATEGIES
from embtie.decisions import TWO_FAMILIES, Decision, decide_all, paired_difference
from embtie.metrics import DEFAULT_MARGINS

HERE = Path(__file__).resolve().parents[1] / "results" / "default-job"
"""the results folder this script reads and writes."""
NOISE = HERE / "noise"
BASELINE = "tied"
MARGIN = DEFAULT_MARGINS["valid_ppl"]


def _read(name: str) -> list[dict[str, str]]:
    with open(NOISE / name, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def ppl_table(rows: list[dict[str, str]]) -> dict[tuple[str, str, str, int], dict[str, float]]:
    """(setting, cpu, variant, seed) -> strategy -> final valid perplexity."""
    out: dict[tuple[str, str, str, int], dict[str, float]] = defaultdict(dict)
    for r in rows:
        out[(r["setting"], r["cpu"], r["variant"], int(r["seed"]))][r["strategy"]] = float(r["valid_ppl"])
    return out


def paired(obs: dict[str, float], strategy: str) -> float | None:
    """100 (strategy / tied - 1), or None when either is missing."""
    if strategy not in obs or BASELINE not in obs:
        return None
    return 100.0 * (obs[strategy] / obs[BASELINE] - 1.0)


def _sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else math.nan


def paired_summary(table: dict, setting: str, strategy: str, variants: set[str] | None = None) -> dict[str, float]:
    """Mean and sd of the paired percent differences of ``strategy`` over the observations of ``setting``
    (every variant and CPU, or those in ``variants``), and their number."""
    d = [x for (s, _, v, _), obs in table.items() if s == setting and (variants is None or v in variants)
         if (x := paired(obs, strategy)) is not None]  # fmt: skip
    return {"n": len(d), "mean": statistics.fmean(d) if d else math.nan, "sd": _sd(d)}


def machine_spread(table: dict, setting: str, strategy: str) -> dict[str, float]:
    """How far one seed's perplexity moves between numerics variants (and CPUs): the median and largest
    of 100 (max / min - 1) over the seeds measured under at least two of them; and the sd of the paired
    difference across variants, pooled over seeds."""
    by_seed: dict[int, list[float]] = defaultdict(list)
    diffs: dict[int, list[float]] = defaultdict(list)
    for (s, _, _, seed), obs in table.items():
        if s == setting and strategy in obs:
            by_seed[seed].append(obs[strategy])
            if (x := paired(obs, strategy)) is not None and strategy != BASELINE:
                diffs[seed].append(x)
    spreads = [100.0 * (max(v) / min(v) - 1.0) for v in by_seed.values() if len(v) > 1]
    within = [x - statistics.fmean(v) for v in diffs.values() if len(v) > 1 for x in v]
    dof = sum(len(v) - 1 for v in diffs.values() if len(v) > 1)
    pooled = math.sqrt(sum(x * x for x in within) / dof) if dof else math.nan
    return {
        "seeds": len(spreads),
        "median": statistics.median(spreads) if spreads else math.nan,
        "max": max(spreads) if spreads else math.nan,
        "paired_sd_within_seed": pooled,
    }


def sd_by_step(curves: list[dict[str, str]], setting: str, strategy: str) -> dict[int, tuple[int, float, float]]:
    """step -> (pairs, mean, sd) of 100 (exp(loss_strategy - loss_tied) - 1) on the periodic 10-batch
    validations (and the final whole-set one at the last step), over every variant and seed."""
    loss: dict[tuple[str, str, int, int], dict[str, float]] = defaultdict(dict)
    for r in curves:
        if r["setting"] == setting:
            loss[(r["cpu"], r["variant"], int(r["seed"]), int(r["step"]))][r["strategy"]] = float(r["valid_loss"])
    by_step: dict[int, list[float]] = defaultdict(list)
    for (_, _, _, step), obs in loss.items():
        if strategy in obs and BASELINE in obs:
            by_step[step].append(100.0 * (math.exp(obs[strategy] - obs[BASELINE]) - 1.0))
    return {k: (len(v), statistics.fmean(v), _sd(v)) for k, v in sorted(by_step.items())}


def variant_decisions(
    table: dict, setting: str, strategies: tuple[str, ...], seeds: int
) -> dict[tuple[str, str], dict[str, Decision]]:
    """(cpu, variant) -> strategy -> the default job's decision (one look at ``seeds`` paired seeds, level
    0.05, Holm over the strategies, perplexity margin ±1%) from that variant's own runs, for every
    (cpu, variant) that has all ``seeds`` seeds of every strategy."""
    runs: dict[tuple[str, str], dict[int, dict[str, float]]] = defaultdict(dict)
    for (s, cpu, variant, seed), obs in table.items():
        if s == setting and seed < seeds and all(k in obs for k in strategies):
            runs[(cpu, variant)][seed] = obs
    out = {}
    for key, by_seed in sorted(runs.items()):
        if len(by_seed) < seeds:
            continue
        order = sorted(by_seed)
        base = [by_seed[i][BASELINE] for i in order]
        diffs = {k: paired_difference([by_seed[i][k] for i in order], base, MARGIN)
                 for k in strategies if k != BASELINE}  # fmt: skip
        out[key] = decide_all(diffs, higher_is_better=False, level=0.05, rule=TWO_FAMILIES)  # its design's rule
    return out


def _said(d: Decision) -> str:
    """'better, -8.81% [-10.44, -7.11] (97.5% CI)': the verdict and the interval its test used (at its
    Holm step)."""
    c_diff, c_eq = d.confidences()
    lo, hi = d.tost_ci if d.verdict == "equivalent" else d.ci
    level = c_eq if d.verdict == "equivalent" else c_diff
    text = f"{d.verdict}, {d.mean:+.2f}% [{lo:+.2f}, {hi:+.2f}] ({100 * level:.4g}% CI)"
    return text if d.verdict != "undecided" else text + f", {d.seeds_needed or '> 200'} seeds would decide it"


def _f(x: float) -> str:
    """A signed percentage, or - when there is none."""
    return "-" if not math.isfinite(x) else f"{x:+.2f}"


def _u(x: float) -> str:
    """An unsigned percentage (a spread), or - when there is none."""
    return "-" if not math.isfinite(x) else f"{x:.2f}"


def markdown() -> str:
    rows = _read("runs.csv")
    table = ppl_table(rows)
    settings = sorted({r["setting"] for r in rows})
    strategies = sorted({r["strategy"] for r in rows} - {BASELINE}, key=lambda k: (k not in DEFAULT_STRATEGIES, k))
    cpus = sorted({r["cpu"] for r in rows})
    out = ["# The default job's noise, measured", "",
           f"Runs: {len(rows)} (noise/runs.csv), on {', '.join(cpus)}. Percentages are paired differences "
           "100 (strategy / tied - 1) of the final perplexity on the whole PTB validation set (or its first "
           "20,000 tokens where the setting says so), same seed, setting, variant and CPU.", "",
           "## The default job's verdicts under each numerics variant", "",
           f"Each row: the default job's {DEFAULT_JOB_SEEDS} paired seeds trained under one variant, decided as "
           "`embtie compare` decides them (one look, level 0.05, Holm, margin ±1%; the interval printed is the "
           "one the verdict's test used, at its Holm step).", "",
           "| CPU | variant | " + " | ".join(k for k in DEFAULT_STRATEGIES if k != BASELINE) + " |",
           "|---|---|" + "---|" * (len(DEFAULT_STRATEGIES) - 1)]  # fmt: skip
    for (cpu, variant), ds in variant_decisions(table, "job", DEFAULT_STRATEGIES, DEFAULT_JOB_SEEDS).items():
        out.append(f"| {cpu} | {variant} | " + " | ".join(_said(ds[k]) for k in ds) + " |")
    out += ["", "## Paired differences per setting and numerics variant", "",
           "| setting | variant | strategy | pairs | mean Δ (%) | sd of Δ (%) |",
           "|---|---|---|---|---|---|"]  # fmt: skip
    for setting in settings:
        variants = sorted({r["variant"] for r in rows if r["setting"] == setting})
        for v in [*variants, "all"]:
            for s in strategies:
                ps = paired_summary(table, setting, s, None if v == "all" else {v})
                if ps["n"]:
                    out.append(f"| {setting} | {v} | {s} | {ps['n']} | {_f(ps['mean'])} | {_u(ps['sd'])} |")
    out += ["", "## What the machine moves", "",
            "One seed trained under several numerics variants (other kernels of the same CPU, or another CPU): "
            "the spread 100 (max / min - 1) of its perplexity, and the sd of its paired difference around that "
            "seed's mean over the variants.", "",
            "| setting | strategy | seeds | median spread (%) | largest spread (%) | sd of Δ within a seed (%) |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for setting in settings:
        for s in (BASELINE, *strategies):
            m = machine_spread(table, setting, s)
            if m["seeds"]:
                within = "-" if s == BASELINE else _u(m["paired_sd_within_seed"])
                out.append(f"| {setting} | {s} | {m['seeds']} | {_u(m['median'])} | {_u(m['max'])} | {within} |")
    curves = _read("curves.csv")
    out += ["", "## The paired spread against training steps (setting job)", "",
            "Validation every 50 steps on 10 batches (10,240 tokens) and, at step 300, the whole set.", "",
            "| strategy | step | pairs | mean Δ (%) | sd of Δ (%) |", "|---|---|---|---|---|"]
    for s in strategies:
        for step, (n, mean, sd) in sd_by_step(curves, "job", s).items():
            out.append(f"| {s} | {step} | {n} | {_f(mean)} | {_u(sd)} |")
    return "\n".join(out) + "\n"


def main() -> None:
    text = markdown()
    (NOISE / "noise.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
