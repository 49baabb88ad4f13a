"""Where the runs of ``embtie compare`` are trained (``--launcher``):

- ``base``: what a launcher does (``Launcher``), its outcome (``Launched``, ``FailedRun``), ``LaunchError``
- ``local``: this machine, one run at a time or a pool of worker processes (``--jobs``); the default
- ``slurm``: one Slurm job per run through submitit, waiting for them or not (``--no-wait``), collecting
  finished runs and naming failed ones with their logs; its parts: ``slurm_resources`` (what a job asks
  for), ``slurm_jobs`` (the jobs file), ``slurm_queue`` (squeue), ``slurm_task`` (what a job runs)

The Slurm modules import submitit only when a launch needs it: without it, ``--dry-run`` still prints
the plan.
"""

from embtie.comparison.launchers.base import FailedRun, Launched, Launcher, LaunchError
from embtie.comparison.launchers.local import LocalLauncher
from embtie.comparison.launchers.slurm import SlurmLauncher
from embtie.comparison.launchers.slurm_resources import SlurmResources

__all__ = ["FailedRun", "LaunchError", "Launched", "Launcher", "LocalLauncher", "SlurmLauncher", "SlurmResources"]
