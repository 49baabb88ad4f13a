"""``EMBTIE_CHEAP=1``: run any documented command as a smoke test (seconds, not hours).

The documentation's commands are executed by the test suite (``tests/docs/test_docs_run.py``) exactly as
written, with this one variable set. It changes no command line: it shrinks what the commands train, so a
command that stops working fails CI while the docs keep showing the real budget.

With ``EMBTIE_CHEAP`` set to anything but ``""`` or ``0``:

- every run config (``embtie train``, each run of ``embtie compare``, ``embtie.config.load_config`` from
  Python) gets the overrides of ``overrides`` on top of the preset, the file and the user's own overrides:
  3 optimizer steps with a checkpoint after each (so ``embtie average --last 3`` works), no warmup, tiny
  data slices and batches (``CHEAP_TRAIN`` plus ``CHEAP_DATA[task]``);
- ``embtie compare`` trains one seed (``--seeds``; ``--until-decided``: 2 seeds, one look), one run at a
  time (``--jobs 1``: no worker processes to start);
- ``embtie hf-compare`` is ``embtie compare`` (its runs are cut as above);
- ``embtie theory`` measures the initial loss on ``THEORY_TOKENS`` tokens and the properties with
  ``THEORY_TRIALS`` mixtures.

Numbers a cheap run prints mean nothing; the variable is for checking that commands work.
"""

from __future__ import annotations

import os
from typing import Any

CHEAP_ENV = "EMBTIE_CHEAP"

CHEAP_TRAIN: tuple[str, ...] = (
    "train.max_steps=3",
    "train.warmup_steps=0",
    "train.eval_every=0",
    "train.eval_batches=1",
    "train.log_every=1",
    "train.checkpoint_every=1",
)
CHEAP_DATA: dict[str, tuple[str, ...]] = {
    "lm": ("data.batch_size=2", "data.eval_batch_size=2", "data.train_tokens=2048", "data.valid_tokens=512"),
    "translation": ("data.train_pairs=64", "data.valid_pairs=4", "data.max_tokens=512", "data.beam=2"),
    "captioning": ("data.train_limit=8", "data.valid_limit=4", "data.batch_size=4", "data.beam=2"),
}
MAX_SEEDS = 1
SEQUENTIAL_SEEDS = 2  # --until-decided needs a pair
THEORY_TOKENS = 1000
THEORY_TRIALS = 100


def enabled() -> bool:
    """Whether ``EMBTIE_CHEAP`` asks for smoke-test runs."""
    return os.environ.get(CHEAP_ENV, "").strip() not in ("", "0")


def overrides(raw: dict[str, Any]) -> list[str]:
    """The ``key=value`` overrides that make the run config ``raw`` (a preset or file, user overrides applied)
    a smoke test; none when the variable is unset. Only the keys of the run's task are touched."""
    if not enabled():
        return []
    return [*CHEAP_TRAIN, *CHEAP_DATA.get(str(raw.get("task", "")), ())]


def cap(value: int, limit: int) -> int:
    """``value``, or ``limit`` when smaller and the variable is set (seeds, steps, tokens)."""
    return min(value, limit) if enabled() else value
