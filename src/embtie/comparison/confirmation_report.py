"""A comparison's verdicts confirmed on fresh seeds, and one verdict pooled over the fresh folders' machines.

The original folder's verdicts are read as its report printed them (a folder decided under the one-family
rule keeps them in results.json), else decided again from its rows under the rule it was designed under
(``decisions.rule_of``). Each fresh folder is the same design (``confirmation.read_original``: the same arms,
baseline, metric, margins and overrides) re-run on seeds the original never used, on one machine (its runs'
summary.json name it: CPU model and kernel path, or GPU). Per strategy and fresh folder: the fresh verdict
and whether it confirms the original (``decisions.pooled.confirmation``: confirmed, contradicted or
undecided); then one verdict over all fresh folders with the machine as a block
(``decisions.pooled.blocked_difference``), every strategy in one family at 0.05.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embtie.comparison.confirmation import read_original
from embtie.comparison.records import MetricVerdicts, Numerics, ResultRow
from embtie.comparison.verdicts import all_verdicts, paired_values
from embtie.decisions import Decision, decide_all, rule_of
from embtie.decisions.pooled import CONFIRMATIONS, blocked_difference, confirmation
from embtie.errors import ConfigError
from embtie.metrics import margins_with, primary


def _saved(folder: Path) -> dict[str, Any]:
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise ConfigError(f"{folder} has no results.json: no comparison has finished there; run "
                          f"`embtie confirm ORIGINAL --out {folder}` (or its `embtie compare`) first")  # fmt: skip
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _rows(saved: dict[str, Any]) -> list[ResultRow]:
    return [ResultRow.from_json(r) for r in saved["rows"]]


def _numerics(folder: Path) -> Numerics | None:
    """A folder's first recorded run's numerics (None: no run recorded them)."""
    for summary in sorted((Path(folder) / "runs").glob("*/seed*/summary.json")):
        raw = json.loads(summary.read_text(encoding="utf-8")).get("numerics")
        if raw:
            return Numerics.from_json(raw)
    return None


def machine(folder: Path) -> str:
    """The machine a folder's runs were made on (its first recorded run's numerics), kernel overrides named."""
    n = _numerics(folder)
    if n is None:
        return f"{Path(folder).name} (not recorded)"
    return n.machine() + "".join(f", {k}={v}" for k, v in n.kernel_env.items())


def _unidentified(folder: Path) -> bool:
    """True when a folder's runs name a CPU without its family and model numbers (runs older than that
    record): one model name ("AMD EPYC") can be several microarchitectures, so such a folder is a block of
    its own rather than merged with another folder of the same name."""
    n = _numerics(folder)
    return n is not None and n.gpu is None and n.cpu_id is None


def block_keys(folders: Sequence[Path]) -> tuple[list[str], list[Path]]:
    """The block of each folder in a pooled verdict: its machine, except that folders which share a machine
    name without the CPU's family and model recorded are told apart by folder; and those folders."""
    names = [machine(f) for f in folders]
    apart = [f for f, m in zip(folders, names) if names.count(m) > 1 and _unidentified(f)]  # read on a clash only
    return [f"{m} [{f}]" if f in apart else m for f, m in zip(folders, names)], apart


def _decisions(saved: dict[str, Any], key: str) -> dict[str, Decision]:
    """A folder's verdicts against its baseline, as its report printed them or decided again under its rule."""
    if "decision_rule" in saved:
        raw = saved.get("verdicts", {}).get(key)
        v = None if raw is None else MetricVerdicts.from_json(raw)
    else:
        v = all_verdicts(_rows(saved), saved.get("baseline", "tied"), rule=rule_of(saved)).get(key)
    if v is None:  # no strategy has two seeds paired with the baseline's yet
        return {}
    return {s: d for s in v.decisions if (d := v.decision(s)) is not None}


def check_same_design(original: Path, fresh: Sequence[Path]) -> None:
    """A ConfigError in one line when a fresh folder is another design than the original. A fresh folder may
    re-run a subset of the original's strategies that keeps its baseline (a re-check of the claims about
    those strategies only, e.g. on a machine where the whole grid costs too much)."""
    before = read_original(original)
    for folder in fresh:
        after = read_original(folder)
        changed = before.differences(after)
        subset = set(after.strategies) <= set(before.strategies) and before.baseline in after.strategies
        if subset and changed.startswith("strategies:") and "; " not in changed:
            changed = ""
        if changed:
            raise ConfigError(
                f"{folder} is another design than {original} ({changed}): a confirmation re-runs "
                f"the same design; give a folder `embtie confirm {original} --out ...` wrote"
            )


def _said(d: Decision) -> str:
    return f"{d.verdict} ({d.mean:+.2f}, {d.n} pairs)"


def _blocks(
    folders: Sequence[dict[str, Any]], machines: Sequence[str], strategy: str, baseline: str, metric: Any
) -> dict[str, tuple[list[float], list[float]]]:
    """Per machine, the (strategy, baseline) values of every folder made on it, paired by seed within each
    folder: two folders of one machine are one block, and a folder without the strategy adds nothing."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for saved, m in zip(folders, machines):
        mine, base = paired_values(_rows(saved), strategy, baseline, metric)
        if mine:
            values, baseline_values = out.setdefault(m, ([], []))
            values += mine
            baseline_values += base
    return out


def confirmation_report(original: Path, fresh: Sequence[Path], pool_original: bool = False) -> str:
    """The confirmation table, one line of confirmed / contradicted / undecided per fresh folder, and the
    pooled verdicts, as Markdown. The pooled column decides, in one family at 0.05, the strategies the fresh
    folders re-ran, over their machines; with ``pool_original`` the original's pairs are one more block (its
    machine as its runs recorded it, or "not recorded")."""
    check_same_design(original, fresh)
    orig = _saved(original)
    news = [_saved(f) for f in fresh]
    machines = [machine(f) for f in fresh]
    baseline = orig.get("baseline", "tied")
    metric = primary(_rows(orig), orig.get("metric"))
    before = _decisions(orig, metric.key)
    after = [_decisions(saved, metric.key) for saved in news]
    margin = margins_with({})[metric.margin_key]
    pooled_paths = [original, *fresh] if pool_original else list(fresh)
    pooled_folders = [orig, *news] if pool_original else news
    pooled_machines, apart = block_keys(pooled_paths)
    by_strategy = {s: blocks for s in before
                   if _blocks(news, machines, s, baseline, metric)
                   and (blocks := _blocks(pooled_folders, pooled_machines, s, baseline, metric))}  # fmt: skip
    pooled = decide_all({s: blocked_difference(b, margin) for s, b in by_strategy.items()}, metric.higher_is_better)
    title = "pooled over machines, the original's included" if pool_original else "pooled over machines"
    lines = [f"Original: {original} ({metric.label} against {baseline}, rule {rule_of(orig)}); fresh: "
             + ", ".join(f"{f} ({m})" for f, m in zip(fresh, machines)) + ".", "",
             "| strategy | original | " + " | ".join(f"fresh: {m}" for m in machines) + f" | {title} |",
             "|---|---|" + "---|" * len(fresh) + "---|"]  # fmt: skip
    outcomes: list[dict[str, list[str]]] = [{c: [] for c in CONFIRMATIONS} for _ in fresh]
    for s, d in before.items():
        cells = []
        for i, decided in enumerate(after):
            new = decided.get(s)
            if new is None:
                cells.append("-")
                continue
            outcome = confirmation(d, new)
            outcomes[i][outcome].append(s)
            cells.append(f"{_said(new)}: {outcome}")
        p = pooled.get(s)
        if p is None:
            lines.append(f"| {s} | {_said(d)} | " + " | ".join(cells) + " | - (not re-run) |")
            continue
        n_blocks = len(by_strategy[s])
        machines_said = f"{n_blocks} machine" + ("s" if n_blocks > 1 else "")
        interval = f"[{p.ci[0]:+.2f}, {p.ci[1]:+.2f}] ({100 * p.confidences()[0]:.4g}%)"
        lines.append(f"| {s} | {_said(d)} | " + " | ".join(cells)
                     + f" | {p.verdict}, {p.mean:+.2f} {interval}, {p.n} pairs, {machines_said} |")  # fmt: skip
    if not before:
        lines.append(f"({original} has no verdict on {metric.label} yet: fewer than two seeds paired with "
                     f"{baseline}'s; nothing to confirm)")  # fmt: skip
    if apart and by_strategy:
        lines.append(f"(one block each, though their runs name one CPU: {', '.join(str(f) for f in apart)}; "
                     "those runs predate the record of the CPU's family and model, and one model name can "
                     "be several microarchitectures)")  # fmt: skip
    lines.append("")
    for f, m, out in zip(fresh, machines, outcomes):
        said = "; ".join(f"{c}: {', '.join(out[c]) or 'none'}" for c in CONFIRMATIONS)
        lines.append(f"{f} ({m}): {said}.")
    return "\n".join(lines) + "\n"
