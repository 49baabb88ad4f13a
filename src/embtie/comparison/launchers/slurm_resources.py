"""What each Slurm job of a comparison asks for: partition, GPUs, CPUs, time, memory and extra sbatch flags
(``SlurmResources``), read from the options of ``embtie compare --launcher slurm`` and turned into
submitit's ``SlurmExecutor`` parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from embtie.errors import ConfigError

DEFAULT_TIME_MIN = 60
"""--time when none is given. A run that reaches its limit is requeued and resumes from its checkpoints
(submitit signals it 90 s before the limit), up to ``MAX_TIMEOUTS`` times."""
MAX_TIMEOUTS = 3
"""how often one run's job is requeued after reaching its time limit."""

SET_BY_EMBTIE = {
    "output": "the logs go to DIR/slurm",
    "error": "the logs go to DIR/slurm",
    "array": "embtie submits one array task per run",
    "open-mode": "the logs of a requeued job are appended",
    "signal": "submitit signals a job 90 s before its time limit to requeue it",
    "job-name": "embtie names the jobs after the comparison",
    "partition": "use --slurm-partition",
    "time": "use --time",
    "mem": "use --mem",
    "gpus-per-node": "use --gpus-per-run",
}
"""sbatch flags that --slurm-arg may not set, and why."""

_TIME = re.compile(r"(?:(?P<d>\d+)-)?(?P<a>\d+)(?::(?P<b>\d+))?(?::(?P<c>\d+))?")
_MEM = re.compile(r"\d+[KMGT]?", re.IGNORECASE)
_FLAG = re.compile(r"[a-z][a-z0-9_-]*")


def parse_time(text: str) -> int:
    """Minutes of a Slurm time limit: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``
    (seconds round up)."""
    m = _TIME.fullmatch(text.strip())
    if m is None:
        raise ConfigError(f"--time {text!r} is not a Slurm time; write MINUTES, HH:MM:SS or D-HH:MM:SS, e.g. 4:00:00")
    d, a, b, c = (int(g) if g is not None else None for g in m.group("d", "a", "b", "c"))
    if d is not None:  # D-HH[:MM[:SS]]
        seconds = ((d * 24 + (a or 0)) * 60 + (b or 0)) * 60 + (c or 0)
    elif c is not None:  # HH:MM:SS
        seconds = ((a or 0) * 60 + (b or 0)) * 60 + c
    elif b is not None:  # MM:SS
        seconds = (a or 0) * 60 + b
    else:  # MM
        seconds = (a or 0) * 60
    minutes = -(-seconds // 60)
    if minutes < 1:
        raise ConfigError(f"--time {text!r} must be at least one minute")
    return minutes


def parse_mem(text: str) -> str:
    """A memory request as sbatch reads it: a number with an optional K/M/G/T suffix (default M)."""
    if not _MEM.fullmatch(text.strip()) or int(re.sub(r"\D", "", text)) == 0:
        raise ConfigError(f"--mem {text!r} is not a memory size; write e.g. 16G or 8000M")
    return text.strip().upper()


def parse_slurm_args(items: list[str]) -> dict[str, str | bool]:
    """``--slurm-arg KEY=VALUE`` (or ``KEY`` for a flag without a value) -> sbatch flags, e.g.
    ``qos=high`` -> ``--qos=high``, ``exclusive`` -> ``--exclusive``."""
    extra: dict[str, str | bool] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip().lstrip("-").replace("_", "-")
        if not _FLAG.fullmatch(key):
            raise ConfigError(f"--slurm-arg {item!r}: write an sbatch flag as KEY=VALUE or KEY, e.g. qos=high")
        if key in SET_BY_EMBTIE:
            raise ConfigError(f"--slurm-arg {item!r}: embtie sets --{key} itself ({SET_BY_EMBTIE[key]})")
        if eq and not value.strip():
            raise ConfigError(f"--slurm-arg {item!r} has no value; write {key}=VALUE, or {key} for a bare flag")
        extra[key] = value.strip() if eq else True
    return extra


@dataclass(frozen=True)
class SlurmResources:
    """One Slurm job per run: what it asks for. CPUs per job are the runs' ``train.threads`` (1 when unset)."""

    partition: str | None = None
    gpus_per_run: int = 0
    time_min: int = DEFAULT_TIME_MIN
    mem: str | None = None
    extra: dict[str, str | bool] = field(default_factory=dict)
    """further sbatch flags (``--slurm-arg``), passed as submitit's ``additional_parameters``."""

    def __post_init__(self) -> None:
        if self.gpus_per_run < 0:
            raise ConfigError(f"--gpus-per-run {self.gpus_per_run} must be >= 0")
        if self.gpus_per_run > 1:
            raise ConfigError(
                f"--gpus-per-run {self.gpus_per_run}: a run of --launcher slurm trains in one process, on one GPU; "
                "train a run on several GPUs with srun torchrun (docs/cluster.md)"
            )
        if self.time_min < 1:
            raise ConfigError(f"--time {self.time_min} min must be at least one minute")

    def executor_parameters(self, cpus: int, job_name: str) -> dict[str, Any]:
        """The parameters of submitit's ``SlurmExecutor.update_parameters`` for jobs of ``cpus`` CPUs."""
        params: dict[str, Any] = {"job_name": job_name, "time": self.time_min, "cpus_per_task": cpus}
        if self.partition:
            params["partition"] = self.partition
        if self.gpus_per_run:
            params["gpus_per_node"] = self.gpus_per_run
        if self.mem:
            params["mem"] = self.mem
        if self.extra:
            params["additional_parameters"] = dict(self.extra)
        return params

    def describe(self, cpus: int) -> str:
        """The request in words (a line of --dry-run)."""
        parts = [f"partition {self.partition or '(default)'}", f"{cpus} CPU" + ("s" if cpus != 1 else "")]
        parts.append(f"{self.gpus_per_run} GPU" + ("s" if self.gpus_per_run != 1 else ""))
        parts.append(f"time {self.time_min} min")
        parts.append(f"mem {self.mem or '(default)'}")
        parts += [f"--{k}" if v is True else f"--{k}={v}" for k, v in self.extra.items()]
        return ", ".join(parts)
