"""Training and analysing the planned runs of a comparison: one at a time, or ``jobs`` at a time in
worker processes. Finished runs are skipped and interrupted ones resumed, so a comparison can be run
again until it is complete."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from embtie.analysis import run_diagnostics
from embtie.comparison.grid import CompareSpec, PlannedRun, plan
from embtie.config import RunConfig
from embtie.errors import ConfigError
from embtie.progress import bar as progress_bar

N_UPDATE_BATCHES = 8
"""training batches over which each run's row updates are counted."""

Summary = Mapping[str, Any]
"""a run's training summary, as ``embtie.training.train`` returns it."""


def default_jobs() -> int:
    """Runs at once in the default job: one per core, at most 2 (each run uses one thread)."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()  # foreign: os
    return max(1, min(2, cores or 1))


def train_and_analyse(cfg: RunConfig, run_dir: Path, analysis: str = "full") -> tuple[Summary, float]:
    """Train one run (resuming it; ``train`` holds the run's writer lock meanwhile) and analyse it once at
    level ``analysis`` (again when its analysis is older than its newest checkpoint, or lighter than
    asked); (summary, seconds). Top-level so that worker processes (``--jobs``) can run it."""
    from embtie.rundir.lock import command_line
    from embtie.training import train

    t0 = time.perf_counter()
    summary = train(cfg, run_dir)
    stored = run_diagnostics.current(run_dir)
    if stored is None or not run_diagnostics.covers(stored[0], analysis):
        run_diagnostics.analyse(run_dir, N_UPDATE_BATCHES, command=command_line(), level=analysis)
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
    todo = [r for r in order if not r.done]
    done = len(runs) - len(todo)
    bar = progress_bar(total=len(runs), initial=done, desc="compare", unit="run", leave=True, enabled=progress)

    count = [done]

    def started(r: PlannedRun) -> None:
        if r.trained:  # finished training: only its analysis is missing or at a lower level
            status = "analysing"
        else:
            status = "resuming" if (r.run_dir / "checkpoints").is_dir() else "training"
        count[0] += 1
        if progress:
            bar.write(f"[{count[0]}/{len(runs)}] {status} {r.strategy} seed {r.seed} -> {r.run_dir}")

    def finished(r: PlannedRun, summary: Summary, seconds: float) -> None:
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
            finished(r, *train_and_analyse(r.cfg, r.run_dir, r.analysis))
    else:
        _execute_parallel(todo, jobs, started, finished)
    bar.close()
    return runs


def _execute_parallel(
    todo: list[PlannedRun],
    jobs: int,
    started: Callable[[PlannedRun], None],
    finished: Callable[[PlannedRun, Summary, float], None],
) -> None:
    """Runs in ``jobs`` worker processes (spawned: no state shared with this one); progress bars of the
    runs themselves are off, each finished run is reported as it ends."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    threads = todo[0].cfg.train.threads
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init, initargs=(threads,)) as pool:
        pending: dict[Future[tuple[Summary, float]], PlannedRun] = {}
        queue = list(todo)
        while queue or pending:
            while queue and len(pending) < jobs:
                r = queue.pop(0)
                started(r)
                quiet = r.cfg.replace({"train.progress": False})
                pending[pool.submit(train_and_analyse, quiet, r.run_dir, r.analysis)] = r
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                r = pending.pop(f)
                finished(r, *f.result())
