"""What every launcher of ``embtie compare`` does: train the planned runs of a grid that are not finished
(``Launcher.launch``) and say what one run is given (``Launcher.resources``, the lines of --dry-run).
A launch ends with a ``Launched``: the plan, the runs that failed (with their logs) and the runs still
in flight (submitted to a cluster and not waited for)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from embtie.comparison.grid import CompareSpec, PlannedRun, plan
from embtie.errors import EmbtieError


class LaunchError(EmbtieError):
    """The runs could not be submitted or waited for (no scheduler, a refused submission); one line."""


@dataclass(frozen=True)
class FailedRun:
    """A run whose job ended before the run was trained and analysed."""

    run: PlannedRun
    job_id: str
    why: str
    """what ended it, as far as is known (the exception's last line, the scheduler's state)."""
    log: Path
    """the job's log (stderr: where a traceback lands)."""

    def describe(self) -> str:
        run = f"{self.run.strategy} seed {self.run.seed}"
        return f"{run} failed on the cluster (job {self.job_id}: {self.why}); log: {self.log}"


@dataclass
class Launched:
    """The outcome of one launch."""

    runs: list[PlannedRun]
    """the whole plan, finished runs included."""
    failed: list[FailedRun] = field(default_factory=list)
    in_flight: list[PlannedRun] = field(default_factory=list)
    """submitted and not finished yet (--no-wait): the same command collects them later."""

    @property
    def complete(self) -> bool:
        return not self.failed and not self.in_flight

    def require_complete(self) -> None:
        """Raise ``LaunchError`` naming the failed runs (and their logs) or the ones in flight."""
        if self.failed:
            lines = "; ".join(f.describe() for f in self.failed)
            raise LaunchError(f"{len(self.failed)} of {len(self.runs)} runs failed: {lines}")
        if self.in_flight:
            raise LaunchError(f"{len(self.in_flight)} of {len(self.runs)} runs are still in flight")


class Launcher(ABC):
    """Where and how the runs of a comparison are trained."""

    name: ClassVar[str]

    @abstractmethod
    def resources(self, run: PlannedRun) -> str:
        """What ``run`` is given (processes, CPUs, GPUs, time, memory), in words."""

    @abstractmethod
    def launch(self, spec: CompareSpec, progress: bool = True) -> Launched:
        """Train and analyse every run of ``spec`` that is not finished (resuming interrupted ones)."""

    def plan_lines(self, spec: CompareSpec) -> list[str]:
        """One line per planned run: strategy, seed, run directory, resources, and whether it is finished
        already (what ``--dry-run`` prints; nothing is trained or submitted)."""
        lines = []
        for r in plan(spec):
            state = "finished" if r.done else ("resume" if (r.run_dir / "checkpoints").is_dir() else "train")
            lines.append(f"{r.strategy}\tseed {r.seed}\t{r.run_dir}\t{self.resources(r)}\t{state}")
        return lines
