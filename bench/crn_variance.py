"""What common random numbers buy: the same comparison trained under seeding scheme 1 (the body's
initial weights depend on the strategy) and scheme 2 (they do not), side by side.

    python -m bench.crn_variance runs/crn/scheme1 runs/crn/scheme2 [--metric valid_ppl]

reads the two comparisons' results.csv and prints, per strategy against tied, the correlation of the
per-seed values, the spread of the paired per-seed differences (percent of tied), the 95% interval's
half-width and the seeds a paired test would need at the observed difference (80% power): the
measurement of docs/decisions.md's claim, with every number from the two folders given.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from embtie.decisions import paired_difference
from embtie.decisions.pairing import pairing
from embtie.decisions.power import seeds_to_decide
from embtie.metrics import DEFAULT_MARGINS


def per_seed(folder: Path, metric: str) -> dict[str, dict[int, float]]:
    """strategy -> seed -> value of ``metric`` from FOLDER/results.csv."""
    out: dict[str, dict[int, float]] = {}
    with open(folder / "results.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row[metric]:
                out.setdefault(row["strategy"], {})[int(row["seed"])] = float(row[metric])
    return out


def rows(folder: Path, metric: str, baseline: str = "tied") -> list[list[str]]:
    values = per_seed(folder, metric)
    margin = DEFAULT_MARGINS[metric]
    out = []
    for name, mine in values.items():
        if name == baseline:
            continue
        seeds = sorted(set(mine) & set(values[baseline]))
        a, b = [mine[s] for s in seeds], [values[baseline][s] for s in seeds]
        p, d = pairing(a, b), paired_difference(a, b, margin)
        lo, hi = d.interval(0.95)
        needed = seeds_to_decide(d.mean, d.sd, margin.value, 0.05)
        out.append([name, str(p.n), f"{p.correlation:.2f}", f"{d.mean:+.2f}", f"{p.sd_paired:.2f}",
                    f"{(hi - lo) / 2:.2f}", f"{100 * p.variance_removed:.0f}%",
                    str(needed) if needed else "> 200"])  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scheme1", type=Path, help="the comparison folder trained with seeding scheme 1")
    parser.add_argument("scheme2", type=Path, help="the same comparison trained with seeding scheme 2")
    parser.add_argument("--metric", default="valid_ppl", choices=sorted(DEFAULT_MARGINS))
    args = parser.parse_args()
    header = ["scheme", "strategy", "seeds", "correlation with tied", "mean Δ (%)", "sd of paired Δ (%)",
              "95% CI half-width (%)", "variance removed by pairing", "seeds to decide (80% power)"]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for scheme, folder in (("1", args.scheme1), ("2", args.scheme2)):
        for r in rows(folder, args.metric):
            print("| " + " | ".join([scheme, *r]) + " |")


if __name__ == "__main__":
    main()
