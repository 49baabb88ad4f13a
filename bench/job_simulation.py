"""How often the default job decides: its sequential design replayed on comparisons drawn from the runs
measured in noise/runs.csv (every seed under every numerics variant, on every CPU measured), so that the
machine is one more source of noise the design must absorb.

    python -m bench.job_simulation                    # writes results/default-job/simulation.json
    python -m bench.job_simulation --setting base     # another measured setting, printed only

Both ways of drawing (``embtie.decisions.simulation``: bootstrap of measured seeds, and a normal fit of
their log-values) are reported; the design must decide every strategy with probability >= 0.9 under both.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from dataclasses import replace
from pathlib import Path

from bench.job_noise_report import HERE, ppl_table
from embtie.comparison import DEFAULT_JOB_DESIGN, DEFAULT_STRATEGIES
from embtie.decisions import TWO_FAMILIES
from embtie.decisions.simulation import simulate
from embtie.metrics import DEFAULT_MARGINS

TRIALS = 1000
STRESS = 2.0
"""the stress case: every seed's deviation from the mean log-perplexity doubled (a machine twice as noisy)."""
DEFAULT_JOB_SETTING = "job"
"""the setting of noise/runs.csv that is the default job (bench.job_noise.JOB)."""


def observations(table: Path, setting: str, strategies: tuple[str, ...]) -> list[dict[str, float]]:
    """One observation per (cpu, variant, seed) of ``setting`` that has every strategy: strategy -> valid ppl
    (job_noise_report.ppl_table, the grouping every figure of the folder uses)."""
    with open(table, encoding="utf-8") as f:
        grouped = ppl_table(list(csv.DictReader(f)))
    return [{k: obs[k] for k in strategies} for key, obs in sorted(grouped.items())
            if key[0] == setting and all(k in obs for k in strategies)]  # fmt: skip


def inflated(obs: list[dict[str, float]], factor: float) -> list[dict[str, float]]:
    """Every observation's log-values moved ``factor`` times as far from the mean log-values (per strategy):
    the same effects with ``factor`` times the spread."""
    mean = {k: sum(math.log(o[k]) for o in obs) / len(obs) for k in obs[0]}
    return [{k: math.exp(mean[k] + factor * (math.log(v) - mean[k])) for k, v in o.items()} for o in obs]


def run(setting: str, table: Path) -> dict:
    obs = observations(table, setting, DEFAULT_STRATEGIES)
    margin = DEFAULT_MARGINS["valid_ppl"]
    design = replace(DEFAULT_JOB_DESIGN, rule=TWO_FAMILIES)  # the rule this folder was designed and decided under
    out: dict = {"setting": setting, "observations": len(obs), "design": design.description(),
                 "margin": margin.text(), "trials": TRIALS, "stress_factor": STRESS, "methods": {}}  # fmt: skip
    cases = {"bootstrap": (obs, "bootstrap"), "normal": (obs, "normal"),
             "normal, spread x2": (inflated(obs, STRESS), "normal")}  # fmt: skip
    for name, (drawn, method) in cases.items():
        sim = simulate(drawn, "tied", design, margin, trials=TRIALS, method=method)
        out["methods"][name] = {"probabilities": sim.probabilities, "all_decided": sim.all_decided,
                                "same_on_two_machines": same_on_two(sim.probabilities),
                                "mean_seeds": sim.mean_seeds}  # fmt: skip
    return out


def same_on_two(probabilities: dict[str, dict[str, float]]) -> float:
    """The probability that two machines, each drawing its own noise, print the same verdict for every
    strategy (independent draws: the product over strategies of sum_v P(v)^2)."""
    out = 1.0
    for p in probabilities.values():
        out *= sum(x * x for x in p.values())
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--setting", default=DEFAULT_JOB_SETTING, help="a setting of noise/runs.csv")
    p.add_argument("--table", type=Path, default=HERE / "noise" / "runs.csv")
    a = p.parse_args()
    out = run(a.setting, a.table)
    text = json.dumps(out, indent=1, sort_keys=True)
    print(text)
    if a.setting == DEFAULT_JOB_SETTING:
        (HERE / "simulation.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
