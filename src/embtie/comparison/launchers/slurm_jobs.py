"""The jobs file of a comparison on Slurm, ``DIR/slurm-jobs.json``: which Slurm job was last submitted for
each run (its id and logs). It lets the same command, run again later, collect the runs instead of
submitting them twice. Written atomically (a reader never sees half a file)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from embtie.errors import ConfigError
from embtie.files import write_atomic

JOBS_FILE = "slurm-jobs.json"
VERSION = 1


@dataclass(frozen=True, kw_only=True)
class SubmittedJob:
    """The last job submitted for one run."""

    strategy: str
    seed: int
    run_dir: str
    job_id: str
    """Slurm's id: ``123`` for a lone job, ``123_4`` for a task of an array."""
    stdout: str
    stderr: str
    result: str
    """submitit's result file: written when the run's function returned or raised."""
    submitted: str
    """when, local time, ISO 8601."""

    @property
    def key(self) -> tuple[str, int]:
        return self.strategy, self.seed


def read(out_dir: Path) -> dict[tuple[str, int], SubmittedJob]:
    """The jobs recorded in ``out_dir`` (none when there is no jobs file), by (strategy, seed)."""
    path = Path(out_dir) / JOBS_FILE
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        jobs = [SubmittedJob(**j) for j in raw["jobs"]]
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise ConfigError(
            f"cannot read the jobs file {path} ({e}); if no job of this comparison is still queued, delete it and "
            "run again (finished runs are kept, unfinished ones are submitted again and resume)"
        ) from None
    return {j.key: j for j in jobs}


def write(out_dir: Path, jobs: dict[tuple[str, int], SubmittedJob]) -> Path:
    """Replace the jobs file of ``out_dir`` with ``jobs`` (atomically)."""
    path = Path(out_dir) / JOBS_FILE
    ordered = [asdict(jobs[k]) for k in sorted(jobs)]
    write_atomic(path, json.dumps({"version": VERSION, "jobs": ordered}, indent=1))
    return path
