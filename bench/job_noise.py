"""Where the default job's noise comes from: the same paired runs trained under several settings and
several *numerics variants* of this machine (other instruction paths of torch's and MKL's kernels, other
thread counts), so that "which CPU made it" is measured as one more source of noise.

    python -m bench.job_noise train --out runs/noise --setting base \
        --strategies tied,untied,l2norm --seeds 0-3 --variants native,avx2,default
    python -m bench.job_noise table runs/noise --csv results/default-job/noise/runs.csv

``train`` trains every (setting, variant, strategy, seed) that has no finished ``summary.json`` yet, one
run at a time with one thread (``threads2`` uses two), each as ``python -m embtie train`` in a child
process whose environment selects the kernels before torch is imported; a killed study resumes.
``table`` collects every finished run into one CSV (setting, variant, strategy, seed, valid_ppl, ...),
the measurement results/default-job/ analyses (``python -m bench.job_noise_report``).

Settings are named override sets (SETTINGS below; ``--set KEY=VALUE`` adds overrides to a new name).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from embtie.comparison import DEFAULT_OVERRIDES

BASE = (
    "data.batch_size=16",
    "data.valid_tokens=20000",
    "train.max_steps=300",
    "train.warmup_steps=30",
    "train.eval_every=50",
    "train.eval_batches=10",
    "train.checkpoint_every=300",
)
"""The default job of turn 4 (comparison.grid.DEFAULT_OVERRIDES before the redesign)."""

JOB = tuple(o for o in DEFAULT_OVERRIDES if not o.startswith("train.threads="))
"""The default job (``embtie compare`` with no preset) as it is now; the variant sets the threads."""

SETTINGS: dict[str, tuple[str, ...]] = {
    "job": JOB,
    "base": BASE,
    "lr1e-3": (*BASE, "train.lr=0.001"),
    "lr1.5e-3": (*BASE, "train.lr=0.0015"),
    "steps600": (*BASE, "train.max_steps=600", "train.checkpoint_every=600"),
    "fullvalid": tuple(o for o in BASE if not o.startswith("data.valid_tokens")),
}

VARIANTS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "default": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"},
    "threads2": {},
}
"""Environment of each numerics variant. ``native`` is what this CPU picks by itself; ``avx2`` and
``default`` force torch's ATen kernels, MKL's BLAS and oneDNN onto older instruction sets (another CPU
generation); ``threads2`` splits every reduction over two threads (other summation order)."""


def cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo gives it (platform.processor() elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def parse_seeds(text: str) -> list[int]:
    """'0-3' -> [0, 1, 2, 3]; '0,2,5' -> [0, 2, 5]."""
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def run_dir(out: Path, setting: str, variant: str, strategy: str, seed: int) -> Path:
    return out / setting / variant / strategy / f"seed{seed}"


def train_one(
    out: Path, preset: str, setting: str, overrides: tuple[str, ...], variant: str, strategy: str, seed: int
) -> None:
    """Train one run in a child process with the variant's environment (nothing if already finished)."""
    d = run_dir(out, setting, variant, strategy, seed)
    if (d / "summary.json").is_file():
        return
    threads = 2 if variant == "threads2" else 1
    env = {**os.environ, **VARIANTS[variant], "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    cmd = [
        sys.executable, "-m", "embtie", "train", preset, "--quiet", "--out", str(d),
        *overrides, f"train.threads={threads}", f"sharing.name={strategy}", f"seed={seed}",
    ]
    d.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"FAILED {d}: {done.stderr.strip()[-500:]}", file=sys.stderr)
        return
    meta = {"variant": variant, "env": VARIANTS[variant], "threads": threads, "cpu": cpu_model(), "command": cmd[1:]}
    (d / "numerics.json").write_text(json.dumps(meta, indent=1))
    print(f"{setting} {variant} {strategy} seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)


def cmd_train(a: argparse.Namespace) -> None:
    overrides = SETTINGS.get(a.setting, BASE) + tuple(a.set)
    for seed in parse_seeds(a.seeds):
        for variant in a.variants.split(","):
            for strategy in a.strategies.split(","):
                train_one(Path(a.out), a.preset, a.setting, overrides, variant, strategy, seed)


FIELDS = [
    "setting", "variant", "strategy", "seed", "valid_ppl", "best_valid_ppl", "train_time_s", "tokens_per_s", "cpu",
]
CURVE_FIELDS = ["setting", "variant", "strategy", "seed", "step", "valid_loss", "cpu"]


def _key(r: dict) -> tuple[str, str, str, str, str]:
    return (r["setting"], r["variant"], r["strategy"], str(r["seed"]), r["cpu"])


def _write(dest: Path, fields: list[str], rows: list[dict], append: bool) -> int:
    """Write ``rows`` to ``dest``; with ``append``, rows of runs not among them (another CPU's) are kept."""
    old = []
    if dest.is_file() and append:
        with open(dest, encoding="utf-8") as f:
            old = list(csv.DictReader(f))
    keys = {_key(r) for r in rows}
    kept = [r for r in old if _key(r) not in keys]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(kept + rows)
    return len(kept)


def _collect(out: Path) -> tuple[list[dict], list[dict]]:
    """Every finished run under ``out``: one row of results, and its validation curve (every evaluation)."""
    rows, curves = [], []
    for s in sorted(out.glob("*/*/*/seed*/summary.json")):
        setting, variant, strategy, seed = s.parts[-5], s.parts[-4], s.parts[-3], int(s.parts[-2][4:])
        summ = json.loads(s.read_text())
        meta_p = s.parent / "numerics.json"
        meta = json.loads(meta_p.read_text()) if meta_p.is_file() else {}
        head = {"setting": setting, "variant": variant, "strategy": strategy, "seed": seed}
        cpu = meta.get("cpu", "unknown")
        rows.append({**head, "valid_ppl": f"{summ['valid_ppl']:.4f}", "best_valid_ppl": f"{summ['best_valid_ppl']:.4f}",
                     "train_time_s": f"{summ['train_time_s']:.1f}", "tokens_per_s": f"{summ['tokens_per_s']:.0f}",
                     "cpu": cpu})  # fmt: skip
        for line in (s.parent / "metrics.jsonl").read_text().splitlines():
            m = json.loads(line)
            if m.get("split") == "valid":
                curves.append({**head, "step": m["step"], "valid_loss": f"{m['loss']:.6f}", "cpu": cpu})
    order = ("setting", "variant", "strategy", "seed")
    rows.sort(key=lambda r: tuple(r[k] for k in order))
    curves.sort(key=lambda r: (*(r[k] for k in order), r["step"]))
    return rows, curves


def cmd_table(a: argparse.Namespace) -> None:
    rows, curves = _collect(Path(a.out))
    dest = Path(a.csv)
    kept = _write(dest, FIELDS, rows, a.append)
    _write(dest.with_name("curves.csv"), CURVE_FIELDS, curves, a.append)
    print(f"{len(rows)} runs -> {dest} and their validation curves -> {dest.with_name('curves.csv')} "
          f"({kept} rows of other CPUs kept)")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train the missing runs of a setting")
    t.add_argument("--out", default="runs/noise")
    t.add_argument("--preset", default="ptb-gpt-tiny")
    t.add_argument("--setting", default="job", help=f"one of {', '.join(SETTINGS)} or a new name with --set")
    t.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more overrides")
    t.add_argument("--strategies", default="tied,untied,l2norm")
    t.add_argument("--seeds", default="0-3")
    t.add_argument("--variants", default="native,avx2,default")
    t.set_defaults(fn=cmd_train)
    c = sub.add_parser("table", help="collect the finished runs into one CSV")
    c.add_argument("out")
    c.add_argument("--csv", default="results/default-job/noise/runs.csv")
    c.add_argument("--append", action="store_true", help="keep rows of other CPUs already in the CSV")
    c.set_defaults(fn=cmd_table)
    a = p.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main()
