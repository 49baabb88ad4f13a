"""``--launcher local`` (the default): the runs are trained on this machine, one at a time or ``jobs`` at a
time in worker processes (``embtie.comparison.execution``)."""

from __future__ import annotations

from embtie.comparison.execution import execute
from embtie.comparison.grid import CompareSpec, PlannedRun
from embtie.comparison.launchers.base import Launched, Launcher
from embtie.errors import ConfigError


class LocalLauncher(Launcher):
    """A process pool of ``jobs`` workers on this machine (1: the runs in this process, one after another)."""

    name = "local"

    def __init__(self, jobs: int = 1) -> None:
        if jobs < 1:
            raise ConfigError(f"--jobs {jobs} must be >= 1")
        self.jobs = jobs

    def resources(self, run: PlannedRun) -> str:
        threads = run.cfg.train.threads
        where = "this process" if self.jobs == 1 else f"1 of {self.jobs} local worker processes"
        if threads is None:
            return f"{where}, torch's default threads"
        return f"{where}, {threads} thread{'s' if threads != 1 else ''}"

    def launch(self, spec: CompareSpec, progress: bool = True) -> Launched:
        return Launched(runs=execute(spec, progress=progress, jobs=self.jobs))
