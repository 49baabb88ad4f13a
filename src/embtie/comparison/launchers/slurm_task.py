"""What one Slurm job of a comparison runs: ``TrainJob``, a picklable callable that trains and analyses one
run directory (``embtie.comparison.execution.train_and_analyse``).

Every start of the job resumes the run from its newest checkpoint, so a job that Slurm requeues (a
preemption, ``scontrol requeue``, a node failure) or that submitit requeues at its time limit continues
where its last checkpoint left it; the run directory's writer lock, left behind by the earlier start,
is taken over (``embtie.rundir.lock``). ``checkpoint`` is what submitit calls when the job is signalled
before its time limit: the state lives in the run directory, so the job is requeued as it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embtie.comparison.execution import Summary, train_and_analyse
from embtie.config import RunConfig


@dataclass(frozen=True)
class TrainJob:
    """Train and analyse ``run_dir`` with ``cfg`` (resuming it); returns (summary, seconds)."""

    cfg: RunConfig
    run_dir: Path
    analysis: str = "full"

    def __call__(self) -> tuple[Summary, float]:
        return train_and_analyse(self.cfg, self.run_dir, self.analysis)

    def checkpoint(self) -> Any:
        """submitit's hook on preemption or time-out: requeue this same job (it resumes from the run's
        checkpoints)."""
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self)
