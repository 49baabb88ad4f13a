"""The quantization cost of each strategy, paired by seed: per seed, the perplexity increase that
fake-quantizing both vocabulary tables causes, in percent of the run's own full-precision perplexity
(100 * (ppl_q / ppl - 1)); then each strategy's cost against tied's, paired t-test and TOST with Holm over the
strategies (embtie.decisions), margin ±0.25 percentage points. Reads the results.json of the two comparisons in
results/quantization (int8/, int4/) and writes cost.md there::

    python -m bench.quantization_cost
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from embtie.decisions import TWO_FAMILIES, Margin, decide_all, paired_difference

HERE = Path(__file__).resolve().parents[1] / "results" / "quantization"
"""the results folder this script reads and writes."""
MARGIN = Margin(0.25)
"""± percentage points of perplexity increase within which two strategies quantize alike."""


def costs(fmt: str, folder: Path = HERE) -> dict[str, list[float]]:
    """strategy -> the per-seed cost (percent of full-precision perplexity) of ``fmt``, in seed order."""
    rows = json.loads((folder / fmt / "results.json").read_text(encoding="utf-8"))["rows"]
    out: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        out.setdefault(r["strategy"], []).append((r["seed"], 100 * (r[f"valid_ppl_{fmt}"] / r["valid_ppl"] - 1)))
    return {s: [c for _, c in sorted(v)] for s, v in out.items()}


def cost_markdown(folder: Path = HERE) -> str:
    lines = ["# Quantization cost per strategy, paired by seed (both tables fake-quantized)", "",
             "Written by `python -m bench.quantization_cost` from int8/results.json and int4/results.json "
             "(recomputed by tests/docs/test_quoted_figures.py). Cost: perplexity increase in percent of the run's "
             f"own full-precision perplexity. Δ: strategy minus tied, per seed; margin {MARGIN.text()} points; "
             "paired t-test / TOST at 0.05, Holm over the strategies.", "",
             "| format | strategy | seeds | cost: mean (min, max) | Δ cost vs tied [CI at its test's level] "
             "| verdict |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for fmt in ("int8", "int4"):
        c = costs(fmt, folder)
        diffs = {s: paired_difference(v, c["tied"], MARGIN) for s, v in c.items() if s != "tied"}
        decided = decide_all(diffs, higher_is_better=False, rule=TWO_FAMILIES)  # the rule its design used
        for s, v in c.items():
            spread = f"{statistics.mean(v):+.3f}% ({min(v):+.3f}, {max(v):+.3f})"
            if s == "tied":
                lines.append(f"| {fmt} | {s} | {len(v)} | {spread} | baseline | - |")
                continue
            d = decided[s]
            # the interval its verdict's test used: the equivalence one (1 - 2a) for an equivalence, else the
            # difference one
            equivalent = d.verdict == "equivalent"
            (lo, hi), conf = (d.tost_ci, d.confidences()[1]) if equivalent else (d.ci, d.confidences()[0])
            cell = f"{d.mean:+.3f} [{lo:+.3f}, {hi:+.3f}] ({100 * conf:.4g}%)"
            lines.append(f"| {fmt} | {s} | {len(v)} | {spread} | {cell} | {d.verdict} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    (HERE / "cost.md").write_text(cost_markdown(), encoding="utf-8")
    print((HERE / "cost.md").read_text(encoding="utf-8"))
