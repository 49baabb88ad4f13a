"""One training loop for every task (language modelling, translation through its own Task).

Public API::

    from embtie.config import load_config
    from embtie.training import train
    from embtie.rundir.loading import load_run

    cfg = load_config("ptb-gpt-tiny", ["sharing.name=l2norm", "train.max_steps=200"])
    summary = train(cfg, "runs/l2norm")      # dict, also in runs/l2norm/summary.json
    run = load_run("runs/l2norm")            # run.config, run.model (run.model.sharing), run.task.vocab
    run.task.evaluate(run.model, "valid")    # {"loss", "ppl", "tokens", ...}

A run directory holds config.yaml (the whole config), vocab.json, metrics.jsonl, checkpoints/ (see
``embtie.rundir.checkpoints``) and, once finished, summary.json. Calling ``train`` again on the same
directory resumes from the newest checkpoint (bitwise the same result as an uninterrupted run on
CPU); on a finished run it returns the summary without training. One process trains a run directory at a
time: ``train`` holds the run's writer lock (``embtie.rundir.lock``) and refuses, naming the holder, when
another process holds it.

Under ``torchrun`` every process calls ``train``; the global batch is split across processes (DDP,
gloo on CPU, nccl on GPU) and only rank 0 writes files and validates. The loop itself is
``embtie.training.trainer.Trainer``; loading runs back is ``embtie.rundir.loading``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from embtie import runtime
from embtie.config import RunConfig
from embtie.rundir import lock
from embtie.training import preparation
from embtie.training.trainer import Trainer


def train(cfg: RunConfig, out_dir: str | Path) -> dict[str, Any]:
    """Train ``cfg`` into ``out_dir`` (resuming from its newest checkpoint) and return the summary.

    The summary (also RUN_DIR/summary.json) has at least: valid_loss, valid_ppl, best_valid_ppl,
    step0_loss (training loss of the first batch, before any update), train_loss, params_learned,
    params_fixed, tokens_per_s (training tokens per second, all processes), steps, epochs.
    A finished run is not retrained: its summary is returned as it is.
    """
    out = Path(out_dir)
    done = out / "summary.json"
    rt = runtime.setup(cfg.train.device)
    threads = torch.get_num_threads()
    if cfg.train.threads is not None:
        torch.set_num_threads(cfg.train.threads)
    finished = False
    trainer: Trainer | None = None
    try:
        with writer_lock(out, rt):
            preparation.prepare(cfg, out, rt)
            summary = json.loads(done.read_text(encoding="utf-8")) if done.is_file() else {}
            if not summary.get("finished"):
                trainer = Trainer(cfg, out, rt)
                trainer.setup()
                trainer.fit()
                summary = trainer.finish()
        finished = True
        return summary
    finally:
        torch.set_num_threads(threads)
        runtime.teardown(rt, finished)
        if rt.owns_group:
            runtime.keep_until_exit(trainer)


@contextlib.contextmanager
def writer_lock(out: Path, rt: runtime.Runtime) -> Iterator[None]:
    """The run's writer lock, held by rank 0 for every process of the run: when rank 0 cannot take it,
    every process raises (rank 0 the reason, naming the holder)."""
    with contextlib.ExitStack() as stack:
        error: Exception | None = None
        if rt.is_main:
            try:
                stack.enter_context(lock.hold(out, "training", lock.command_line()))
            except Exception as e:  # every process must learn of it before any raises
                error = e
        failed = error is not None
        if rt.distributed:
            failed = runtime.all_reduce_sum([float(failed)], rt)[0] > 0
        if error is not None:
            raise error
        if failed:
            raise lock.LockError(f"rank 0 could not take the writer lock of {out}; see its message")
        yield
