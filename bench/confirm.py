"""Confirm a comparison's verdicts on fresh seeds, and pool the fresh folders over machines.

    python -m bench.confirm ORIGINAL_FOLDER FRESH_FOLDER [FRESH_FOLDER ...] [--out FILE.md]

ORIGINAL_FOLDER holds the results.json of the verdicts being checked (decided again from its per-seed
values under the rule it was designed under, ``decisions.rule_of``). Each FRESH_FOLDER is the same design
re-run by ``embtie compare`` on seeds the original never used, on one machine (its runs' summary.json
name it: CPU model and kernel path, or GPU). Per strategy and folder: the fresh verdict and whether it
confirms the original (``decisions.pooled.confirmation``); then one verdict over all fresh folders with
the machine as a block (``decisions.pooled.blocked_difference``), every strategy in one family at 0.05.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from embtie.comparison.records import MetricVerdicts, Numerics, ResultRow
from embtie.comparison.verdicts import all_verdicts, paired_values
from embtie.decisions import Decision, decide_all, rule_of
from embtie.decisions.pooled import blocked_difference, confirmation
from embtie.metrics import margins_with, primary


def _saved(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "results.json").read_text(encoding="utf-8")))


def _rows(saved: dict[str, Any]) -> list[ResultRow]:
    return [ResultRow.from_json(r) for r in saved["rows"]]


def machine(folder: Path) -> str:
    """The machine a fresh folder's runs were made on (its first run's numerics), kernel overrides named."""
    for summary in sorted((folder / "runs").glob("*/seed*/summary.json")):
        raw = json.loads(summary.read_text(encoding="utf-8")).get("numerics")
        if raw:
            n = Numerics.from_json(raw)
            env = "".join(f", {k}={v}" for k, v in n.kernel_env.items())
            return n.machine() + env
    return f"{folder.name} (not recorded)"


def _decisions(saved: dict[str, Any], key: str) -> dict[str, Decision]:
    """A folder's verdicts against its baseline: as its report printed them (a folder decided under the
    one-family rule keeps them in results.json), else decided again under its rule from its rows."""
    if "decision_rule" in saved and key in saved.get("verdicts", {}):
        v = MetricVerdicts.from_json(saved["verdicts"][key])
    else:
        v = all_verdicts(_rows(saved), saved.get("baseline", "tied"), rule=rule_of(saved))[key]
    return {s: d for s in v.decisions if (d := v.decision(s)) is not None}


def confirm(original: Path, fresh: list[Path]) -> str:
    """The confirmation table and the pooled verdicts, as Markdown."""
    orig = _saved(original)
    baseline = orig.get("baseline", "tied")
    metric = primary(_rows(orig), orig.get("metric"))
    before = _decisions(orig, metric.key)
    lines = [f"Original: {original} ({metric.label}, rule {rule_of(orig)}); fresh: "
             + ", ".join(f"{f} ({machine(f)})" for f in fresh) + ".", "",
             "| strategy | original | " + " | ".join(f"fresh: {machine(f)}" for f in fresh)
             + " | pooled over machines |",
             "|---|---|" + "---|" * len(fresh) + "---|"]  # fmt: skip
    margin = margins_with({})[metric.margin_key]
    by_strategy = {}
    for s in before:
        per_machine = {}
        for f in fresh:
            saved = _saved(f)
            per_machine[machine(f)] = paired_values(_rows(saved), s, baseline, metric)
        by_strategy[s] = blocked_difference(per_machine, margin)
    pooled = decide_all(by_strategy, metric.higher_is_better)
    for s, d in before.items():
        cells = []
        for f in fresh:
            new = _decisions(_saved(f), metric.key).get(s)
            said = "-" if new is None else f"{new.verdict} ({new.mean:+.2f}, {new.n} pairs): {confirmation(d, new)}"
            cells.append(said)
        p = pooled[s]
        interval = f"[{p.ci[0]:+.2f}, {p.ci[1]:+.2f}] ({100 * p.confidences()[0]:.4g}%)"
        lines.append(f"| {s} | {d.verdict} ({d.mean:+.2f}, {d.n} pairs) | " + " | ".join(cells)
                     + f" | {p.verdict}, {p.mean:+.2f} {interval}, {p.n} pairs, {len(fresh)} machines |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.confirm", description=__doc__.split("\n\n")[0])
    parser.add_argument("original", type=Path)
    parser.add_argument("fresh", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    text = confirm(args.original, args.fresh)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
