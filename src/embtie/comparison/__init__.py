"""Grids of strategies x seeds: train every run (skipping finished ones, resuming interrupted ones),
analyse each once, and collect everything the report needs from the saved files.

Layout of an output folder DIR::

    DIR/runs/<strategy>/seed<k>/      one ``embtie.training.api`` run directory each (+ analysis/)
    DIR/results.csv, results.json     one row / record per run, and the per-strategy statistics
    DIR/report.md, report.html, *.png the report (see ``embtie.reporting.comparison_report``)
"""

from __future__ import annotations

import csv
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from embtie import stats
from embtie.analysis import frequency, run_diagnostics, update_dynamics
from embtie.config import load_config
from embtie.errors import ConfigError
from embtie.progress import bar as progress_bar

BASELINE = "tied"

DEFAULT_PRESET = "ptb-gpt-tiny"
DEFAULT_STRATEGIES = ("tied", "untied", "l2norm")
"""The default job: the baseline, untying (Su's first countermeasure, and its parameter cost) and Liu's
normalisation. Chosen so that the verdicts are stable across base seeds at this budget (measured, see
DEFAULT_OVERRIDES). ``tied-loginit`` (-3 to -4% perplexity, seed sd 6) and ``l2norm`` with 3 or 4 seeds
flipped between "better" and "within noise" from one base seed to another; ``fixed`` is left out until
its default works behind a final norm (issue 12: with a learned logit scale starting at 1 it ended the
old 120-step default job at valid perplexity 2467 against tied's 580). Compare them with --strategies."""
DEFAULT_SEEDS = 3
DEFAULT_JOB_SEEDS = 5
DEFAULT_OVERRIDES: tuple[str, ...] = (
    "data.batch_size=16",
    "data.valid_tokens=20000",
    "train.max_steps=300",
    "train.warmup_steps=30",
    "train.eval_every=50",
    "train.eval_batches=10",
    "train.checkpoint_every=300",
    "train.threads=1",
)
"""Applied before the user's overrides when no preset is given: 15 runs (3 strategies x 5 seeds) of 300
steps of 16 x 64 tokens, validated every 50 steps on 10 batches and at the end on the first 20,000 PTB
valid tokens; two runs at a time (``--jobs``, one thread each), sized for <= 10 minutes on 2 idle cores.
Measured (``make run`` and ``--first-seed 5``): 524 s and 504 s; the same verdicts from both base
seeds (untied better by 9.7% / 10.0%, l2norm -2.1% / -2.4% within noise, seed-test p 0.40 / 0.27). With
3 or 4 seeds at 350 steps, l2norm and tied-loginit flipped between "better" and "within noise" across
base seeds (tied's seed sd 5.7 perplexity over 8 seeds). One thread per run: on a
busy machine two threads per process ran 2.8x slower than one (120 steps in 613 s with 2 threads vs 200
steps in 361 s with 1, load average 11 on 2 cores)."""

STRATEGY_OPTIONS: dict[str, dict[str, Any]] = {
    "fixed": {"logit_scale": "learned", "bias": True},
    "hadamard": {"logit_scale": "learned", "bias": True},
}
"""Options given to a strategy in a comparison unless ``sharing.options.*`` overrides say otherwise. A fixed
classifier with unit-norm rows gets a learned logit scale (Hoffer et al.) and a learned output bias: the
bias carries the unigram prior that learned heads put into their row norms (measured on ptb-gpt-tiny, 300
steps, 2 seeds: valid perplexity 1821 without the bias, 1237 with it; tied 357). The width of the random
targets (``target_dim``) is the larger lever for language models and is left at the paper's d here
(docs/fixed-head.md has the measurements)."""

N_UPDATE_BATCHES = 8


def default_jobs() -> int:
    """Runs at once in the default job: one per core, at most 2 (each run uses one thread)."""
    import os

    return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


@dataclass
class CompareSpec:
    preset: str = DEFAULT_PRESET
    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    seeds: int = DEFAULT_SEEDS
    overrides: list[str] = field(default_factory=list)
    out_dir: Path = Path("runs/compare")
    first_seed: int = 0
    """the seeds are first_seed, first_seed + 1, ..., first_seed + seeds - 1."""
    variants: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """label -> (strategy name, options) for entries of ``strategies`` that are labelled variants
    (``LABEL=NAME:key=value:...`` on the command line, see ``parse_strategy``)."""

    def strategy_text(self, label: str) -> str:
        """How ``label`` is written in --strategies."""
        if label not in self.variants:
            return label
        name, opts = self.variants[label]
        return ":".join([f"{label}={name}", *(f"{k}={_yaml_value(v)}"
                                              for k, v in opts.items())])  # fmt: skip

    def command(self) -> str:
        """The shell command that (re)creates this comparison."""
        listed = ",".join(self.strategy_text(label) for label in self.strategies)
        parts = ["embtie compare", self.preset, "--strategies", listed, "--seeds", str(self.seeds)]
        if self.first_seed:
            parts += ["--first-seed", str(self.first_seed)]
        parts += ["--out", str(self.out_dir), *self.overrides]
        return " ".join(parts)


@dataclass
class PlannedRun:
    strategy: str
    seed: int
    run_dir: Path
    cfg: Any


def run_dir(out_dir: Path, strategy: str, seed: int) -> Path:
    return Path(out_dir) / "runs" / strategy / f"seed{seed}"


def _yaml_value(v: Any) -> str:
    """``v`` as one shell-safe YAML token (the inverse of ``yaml.safe_load`` in ``parse_strategy``):
    plain strings as they are, everything else as compact JSON (``[2000,10000]``, ``true``, ``0.5``)."""
    if isinstance(v, str) and yaml.safe_load(v) == v and " " not in v:
        return v
    return json.dumps(v, separators=(",", ":"))


def split_strategies(text: str) -> list[str]:
    """The entries of a --strategies list: split on commas outside brackets (``a,b=x:k=[1,2]``)."""
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return [i.strip() for i in items if i.strip()]


def parse_strategy(item: str) -> tuple[str, str, dict[str, Any]]:
    """(label, strategy name, options) of one --strategies entry: ``NAME`` or ``LABEL=NAME:key=value:...``
    (a labelled variant, e.g. ``adaptive-l2norm=adaptive:within=l2norm``; values are YAML)."""
    head, *opts = item.split(":")
    label, _, name = head.partition("=")
    if not name:
        if opts:
            raise ConfigError(f"give a label to a strategy with options: LABEL={item} (e.g. {head}-variant={item})")
        return head, head, {}
    if not label or not re.fullmatch(r"[A-Za-z0-9_.+-]+", label):
        raise ConfigError(f"bad strategy label {label!r} in {item!r}: use letters, digits, '-', '_', '.', '+'")
    options: dict[str, Any] = {}
    for o in opts:
        key, eq, value = o.partition("=")
        if not eq or not key:
            raise ConfigError(f"{o!r} in {item!r} is not key=value; write LABEL=NAME:key=value:key=value")
        options[key] = yaml.safe_load(value)
    return label, name, options


def plan(spec: CompareSpec) -> list[PlannedRun]:
    """Validated configs of every strategy x seed (a ConfigError names the first bad one)."""
    from embtie import sharing

    if spec.seeds < 1:
        raise ConfigError(f"--seeds {spec.seeds} must be >= 1")
    if spec.first_seed < 0:
        raise ConfigError(f"--first-seed {spec.first_seed} must be >= 0")
    if not spec.strategies:
        raise ConfigError("--strategies is empty; give e.g. --strategies tied,untied")
    for label in spec.strategies:
        sharing.get(spec.variants.get(label, (label, {}))[0])  # ConfigError listing the valid names
    if len(set(spec.strategies)) != len(spec.strategies):
        raise ConfigError(f"--strategies lists a strategy twice: {','.join(spec.strategies)}")
    user_opts = [o for o in spec.overrides if o.split("=", 1)[0].startswith("sharing.")]
    if any(o.split("=", 1)[0] == "sharing.name" for o in user_opts):
        raise ConfigError("do not set sharing.name in a comparison; list strategies with --strategies a,b,c")
    runs = []
    for label in spec.strategies:
        name, variant_opts = spec.variants.get(label, (label, {}))
        base = load_config(spec.preset, [o for o in spec.overrides if o not in user_opts])
        # The preset's options are conventions of its model (sqrt(d) embedding scale, uniform init,
        # softmax bias): every strategy that accepts an option gets it, so that strategies differ only
        # in their output layer. Options the strategy does not accept (another strategy's own, such
        # as proj_reg) are dropped.
        accepted = set(sharing.accepted_options(name))
        options = {k: v for k, v in base.sharing.options.items() if base.sharing.name == name or k in accepted}
        for k, v in STRATEGY_OPTIONS.get(name, {}).items():
            options.setdefault(k, v)
        options.update(variant_opts)
        for seed in range(spec.first_seed, spec.first_seed + spec.seeds):
            cfg = base.replace({"sharing.name": name, "sharing.options": options, "seed": seed})
            cfg = cfg.replace(user_opts) if user_opts else cfg
            cfg = cfg.replace({"train.progress": False})
            runs.append(PlannedRun(label, seed, run_dir(spec.out_dir, label, seed), cfg))
    return runs


def _finished(d: Path) -> bool:
    p = d / "summary.json"
    if not p.is_file():
        return False
    try:
        return bool(json.loads(p.read_text(encoding="utf-8")).get("finished"))
    except json.JSONDecodeError:
        return False


def train_and_analyse(cfg: Any, run_dir: Path) -> tuple[dict, float]:
    """Train one run (resuming it) and analyse it once; (summary, seconds). Top-level so that worker
    processes (``--jobs``) can run it."""
    from embtie.rundir.loading import load_run
    from embtie.training import train

    t0 = time.perf_counter()
    summary = train(cfg, run_dir)
    if run_diagnostics.read(run_dir) is None:
        loaded = load_run(run_dir)
        diag, arrays = run_diagnostics.diagnose(loaded.model, loaded.task, loaded.config, summary, N_UPDATE_BATCHES)
        run_diagnostics.write(run_dir, diag, arrays)
    return summary, time.perf_counter() - t0


def _worker_init(threads: int | None) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)


def execute(spec: CompareSpec, progress: bool = True, jobs: int = 1) -> list[PlannedRun]:
    """Train and analyse every planned run that is not finished yet, ``jobs`` runs at a time (each in
    its own process when jobs > 1); returns the plan."""
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs} must be >= 1")
    runs = plan(spec)
    # seed-major order: every strategy gets its first seed before any gets a second, so that an
    # interrupted comparison already covers all strategies
    order = sorted(runs, key=lambda r: (r.seed, spec.strategies.index(r.strategy)))
    todo = [r for r in order if not (_finished(r.run_dir) and run_diagnostics.read(r.run_dir) is not None)]
    done = len(runs) - len(todo)
    bar = progress_bar(total=len(runs), initial=done, desc="compare", unit="run", leave=True, enabled=progress)

    count = [done]

    def started(r: PlannedRun) -> None:
        status = "resuming" if (r.run_dir / "checkpoints").is_dir() and not _finished(r.run_dir) else "training"
        count[0] += 1
        if progress:
            bar.write(f"[{count[0]}/{len(runs)}] {status} {r.strategy} seed {r.seed} -> {r.run_dir}")

    def finished(r: PlannedRun, summary: dict, seconds: float) -> None:
        if progress:
            bar.write(
                f"    {r.strategy} seed {r.seed}: valid ppl {summary['valid_ppl']:.1f}, "
                f"step-0 loss {summary['step0_loss']:.2f} ({seconds:.0f} s)"
            )
        bar.update(1)

    if jobs == 1 or len(todo) <= 1:
        for r in todo:
            bar.set_postfix_str(f"{r.strategy} seed {r.seed}")
            started(r)
            finished(r, *train_and_analyse(r.cfg, r.run_dir))
    else:
        _execute_parallel(todo, jobs, started, finished)
    bar.close()
    return runs


def _execute_parallel(todo: list[PlannedRun], jobs: int, started, finished) -> None:
    """Runs in ``jobs`` worker processes (spawned: no state shared with this one); progress bars of the
    runs themselves are off, each finished run is reported as it ends."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    threads = todo[0].cfg.train.threads
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init, initargs=(threads,)) as pool:
        pending: dict[Any, PlannedRun] = {}
        queue = list(todo)
        while queue or pending:
            while queue and len(pending) < jobs:
                r = queue.pop(0)
                started(r)
                quiet = r.cfg.replace({"train.progress": False})
                pending[pool.submit(train_and_analyse, quiet, r.run_dir)] = r
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                r = pending.pop(f)
                finished(r, *f.result())


# --------------------------------------------------------------------------- collecting results
def read_curves(d: Path) -> dict[str, list[float]]:
    """Train and valid loss against step from RUN_DIR/metrics.jsonl (only full or capped validations)."""
    out: dict[str, list[float]] = {"train_steps": [], "train": [], "valid_steps": [], "valid": []}
    p = d / "metrics.jsonl"
    if not p.is_file():
        return out
    for line in p.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        split, loss = rec.get("split"), rec.get("loss")
        if split in ("train", "valid") and loss is not None and math.isfinite(loss):
            out[f"{split}_steps"].append(rec["step"])
            out[split].append(loss)
    return out


CSV_FIELDS = [
    "strategy",
    "seed",
    "valid_ppl",
    "best_valid_ppl",
    "valid_loss",
    "step0_loss",
    "su_predicted",
    "ln_v",
    "params_learned",
    "params_fixed",
    "tokens_per_s",
    "steps",
    "rho_output_norm_freq",
    "rho_input_norm_freq",
    "input_rows_per_batch",
    "output_rows_per_batch",
    "bleu",
    "chrf",
    "vu",
    "rare_token_share",
    "bleu1",
    "meteor",
    "rouge_l",
    "cider",
    "run_dir",
]


def finished_runs(runs: list[PlannedRun]) -> list[PlannedRun]:
    """The runs that are trained and analysed (for a report of an unfinished comparison)."""
    return [r for r in runs if _finished(r.run_dir) and run_diagnostics.read(r.run_dir) is not None]


def collect(spec: CompareSpec, runs: list[PlannedRun]) -> dict:
    """Everything from the saved files: per-run rows, per-strategy statistics, tests vs the baseline."""
    rows, per_run = [], []
    if not runs:
        raise ConfigError(f"no finished runs in {spec.out_dir}; run the comparison first (without --report-only)")
    for r in runs:
        summary = json.loads((r.run_dir / "summary.json").read_text(encoding="utf-8"))
        loaded = run_diagnostics.read(r.run_dir)
        if loaded is None:
            raise ConfigError(f"{r.run_dir} has no analysis; run `embtie analyze {r.run_dir}` or compare again")
        diag, arrays = loaded
        if "counts" in arrays:  # recomputed from the saved arrays, so the current definition applies
            diag["norm_frequency"] = {
                k: frequency.norm_frequency_correlation(arrays[f"{k}_norms"], arrays["counts"])
                for k in ("input", "output")
            }
        nf = diag.get("norm_frequency") or {}
        row = {
            "strategy": r.strategy,
            "seed": r.seed,
            **{k: summary.get(k) for k in ("valid_ppl", "best_valid_ppl", "valid_loss", "step0_loss")},
            "su_predicted": diag["step0"]["predicted"],
            "ln_v": diag["step0"]["ln_v"],
            **{k: summary.get(k) for k in ("params_learned", "params_fixed", "tokens_per_s", "steps")},
            "rho_output_norm_freq": (nf.get("output") or {}).get("rho"),
            "rho_input_norm_freq": (nf.get("input") or {}).get("rho"),
            "input_rows_per_batch": diag["row_updates"]["input_rows_per_batch"],
            "output_rows_per_batch": diag["row_updates"]["output_rows_per_batch"],
            "run_dir": str(r.run_dir),
        }
        row.update(_quality_columns(diag))
        rows.append(row)
        per_run.append(
            {
                "strategy": r.strategy,
                "seed": r.seed,
                "summary": summary,
                "diag": diag,
                "arrays": arrays,
                "curves": read_curves(r.run_dir),
                "path_shares": update_dynamics.read_path_shares(r.run_dir),
                "run_dir": str(r.run_dir),
            }
        )
    strategies = list(dict.fromkeys(r.strategy for r in runs))
    summary_stats = {}
    for name in strategies:
        mine = [x for x in rows if x["strategy"] == name]
        summary_stats[name] = {
            k: stats.seed_summary([x[k] for x in mine if x[k] is not None])
            for k in (
                "valid_ppl",
                "best_valid_ppl",
                "step0_loss",
                "tokens_per_s",
                "rho_output_norm_freq",
                "bleu",
                "vu",
                "bleu1",
                "meteor",
                "rouge_l",
                "cider",
            )
        }
    smooth = "none" if any(p["diag"].get("captioning") for p in per_run) else "exp"  # the COCO scorer's BLEU: none
    tests = _tests_vs_baseline(per_run, rows, "valid_units", "valid_ppl", stats.perplexity_bootstrap, False)
    bleu_tests = _tests_vs_baseline(
        per_run, rows, "bleu_stats", "bleu", lambda a, b: stats.bleu_bootstrap(a, b, smooth=smooth), True
    )
    vu_tests = _tests_vs_baseline(per_run, rows, "word_incidence", "vu", stats.vocab_usage_bootstrap, True)
    return {
        "preset": spec.preset,
        "runs_finished": len(runs),
        "runs_planned": len(spec.strategies) * spec.seeds,
        "strategies": strategies,
        "seeds": spec.seeds,
        "overrides": spec.overrides,
        "command": spec.command(),
        "baseline": BASELINE,
        "rows": rows,
        "summary": summary_stats,
        "tests": tests,
        "bleu_tests": bleu_tests,
        "vu_tests": vu_tests,
        "per_run": per_run,
        "update_dynamics": _similarities(spec, per_run),
    }


QUALITY_COLUMNS = ("bleu", "chrf", "vu", "rare_token_share", "bleu1", "meteor", "rouge_l", "cider")


def _quality_columns(diag: dict) -> dict:
    """A run's output-quality columns: translation (sacreBLEU, chrF) or captioning (BLEU-4 as ``bleu``,
    BLEU-1, METEOR, ROUGE-L, CIDEr), and vocabulary usage with the rare-word share; None where absent."""
    out: dict = dict.fromkeys(QUALITY_COLUMNS)
    mt, cap = diag.get("translation"), diag.get("captioning")
    if mt:
        out.update(bleu=mt["scores"].get("bleu"), chrf=mt["scores"].get("chrf"))
    if cap:
        sc = cap["scores"]
        out.update(bleu=sc.get("bleu4"), bleu1=sc.get("bleu1"), meteor=sc.get("meteor"), rouge_l=sc.get("rouge_l"),
                   cider=sc.get("cider"))  # fmt: skip
    if mt or cap:
        vu = (mt or cap)["vocab_usage"]
        out.update(vu=vu["vu"], rare_token_share=vu["rare_token_share"])
    return out


def _similarities(spec: CompareSpec, per_run: list[dict]) -> list[dict]:
    """Procrustes similarities of every strategy's input vectors to the untied run of its seed."""
    if not any(p["strategy"] == update_dynamics.REFERENCE for p in per_run) or len(per_run) < 2:
        return []
    runs = [
        {"strategy": p["strategy"], "seed": p["seed"], "run_dir": p["run_dir"], "counts": p["arrays"].get("counts")}
        for p in per_run
    ]
    return update_dynamics.cached_similarity_rows(spec.out_dir, runs)


def _seed_stack(per_run: list[dict], strategy: str, key: str) -> np.ndarray:
    """(seeds, units, k) per-unit statistics ``key`` of a strategy, seeds in order."""
    arrs = [p["arrays"][key] for p in sorted(per_run, key=lambda p: p["seed"]) if p["strategy"] == strategy]
    if not arrs:
        return np.zeros((0, 0, 2))
    n = min(a.shape[0] for a in arrs)
    return np.stack([a[:n] for a in arrs])


def _tests_vs_baseline(
    per_run: list[dict],
    rows: list[dict],
    array_key: str,
    row_key: str,
    bootstrap: Callable[[np.ndarray, np.ndarray], dict],
    higher_is_better: bool,
) -> dict[str, dict]:
    """Every strategy against the baseline: ``bootstrap`` over the per-unit statistics ``array_key``
    (paired, the seeds both have), combined with Welch's test over the per-seed values ``row_key``, and
    the verdict. {} when the baseline is missing or some run lacks the statistics."""
    strategies = list(dict.fromkeys(p["strategy"] for p in per_run))
    if BASELINE not in strategies or not all(array_key in p["arrays"] for p in per_run):
        return {}
    base = _seed_stack(per_run, BASELINE, array_key)
    out = {}
    for name in strategies:
        mine = _seed_stack(per_run, name, array_key)
        n = min(len(base), len(mine))
        if name == BASELINE or not n or mine[:n].shape[1:] != base[:n].shape[1:]:
            continue
        t = bootstrap(mine[:n], base[:n])
        seed_vals = {k: [x[row_key] for x in rows if x["strategy"] == k] for k in (name, BASELINE)}
        stats.combine_with_seed_test(t, stats.seed_t_test(seed_vals[name], seed_vals[BASELINE]))
        t["verdict"] = stats.verdict(t, higher_is_better=higher_is_better)
        out[name] = t
    return out


def write_tables(results: dict, out_dir: Path) -> tuple[Path, Path]:
    """DIR/results.csv (one row per run) and DIR/results.json (rows, statistics, tests; no arrays)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "results.csv"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(results["rows"])
    js = {k: v for k, v in results.items() if k != "per_run"}
    js["diagnostics"] = [{"strategy": p["strategy"], "seed": p["seed"], **p["diag"]} for p in results["per_run"]]
    json_path = out_dir / "results.json"
    json_path.write_text(json.dumps(js, indent=1, default=run_diagnostics._json_default), encoding="utf-8")
    return csv_path, json_path
