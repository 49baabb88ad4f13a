"""What Slurm says about submitted jobs, through ``squeue`` (which every cluster has; ``sacct`` needs the
accounting database, which not every cluster runs): the state of each job id it still lists, and which
of those states mean the job is still in flight."""

from __future__ import annotations

import shutil
import subprocess

from embtie.comparison.launchers.base import LaunchError

IN_FLIGHT = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
    }
)
"""job states in which the job may still train its run (a requeued job passes through COMPLETING and
REQUEUED back to PENDING); every other state (COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY,
NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE), and a job squeue no longer lists, has ended."""

CLIENTS = ("sbatch", "squeue")


def require_clients() -> None:
    """Raise ``LaunchError`` when Slurm's client commands are not on PATH."""
    missing = [c for c in CLIENTS if shutil.which(c) is None]
    if missing:
        raise LaunchError(
            f"--launcher slurm needs Slurm's commands, and {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not on PATH; run on a cluster's login node "
            "(or use --launcher local)"
        )


def states(job_ids: list[str]) -> dict[str, str]:
    """job id -> state, for the jobs among ``job_ids`` that squeue still lists (array tasks one by one:
    ``123_4``); a job it does not list has ended and been forgotten."""
    if not job_ids:
        return {}
    bases = sorted({j.split("_", 1)[0] for j in job_ids})
    cmd = ["squeue", "--noheader", "--array", "--states=all", "--jobs", ",".join(bases), "--format=%i|%T"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise LaunchError(f"squeue could not be run ({e}); is this a cluster's login node?") from None
    if out.returncode != 0:
        if "invalid job id" in out.stderr.lower():
            return {}  # none of them is known any more
        first = (out.stderr.strip() or out.stdout.strip() or f"exit status {out.returncode}").splitlines()[0]
        raise LaunchError(f"squeue failed: {first}")
    found: dict[str, str] = {}
    for line in out.stdout.splitlines():
        job, _, state = line.strip().partition("|")
        if job:
            found[job] = state.strip()
    return {j: found[j] for j in job_ids if j in found}


def in_flight(state: str | None) -> bool:
    """Whether a job in ``state`` (None: squeue does not list it) may still train its run."""
    return state is not None and state.split()[0].rstrip("+") in IN_FLIGHT
