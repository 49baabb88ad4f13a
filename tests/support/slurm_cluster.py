"""A real single-node Slurm cluster on this machine, for the tests of ``embtie compare --launcher slurm``.

``start(folder)`` runs munged, slurmctld and slurmd on localhost as root, configured for a container: no
cgroups (``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``), no accounting, no job
accounting gatherer, ``select/cons_tres`` over 2 CPUs on one node named after ``hostname -s``, free
ports, and every state, spool, log, pid and socket file in ``folder`` (a private munge socket and key:
nothing of the machine's own munge or Slurm set-up is used or changed). ``install()`` installs Debian's
``slurm-wlm`` and ``munge`` first when they are missing and this process may (root, apt-get). Either
raises ``Unavailable`` with the reason (and the daemons' log tails) when the cluster cannot run here.
The daemons are stopped by their own pids (``SlurmCluster.stop``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "srun", "sinfo")
KILL_WAIT_S = 1
"""seconds between the SIGTERM and the SIGKILL of a job that is cancelled or requeued (submitit's jobs
ignore SIGTERM, so a requeued job is killed after this)."""


class Unavailable(Exception):
    """Slurm cannot run on this machine; the message says why."""


def _which(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for d in ("/usr/sbin", "/sbin") if (p := Path(d) / name).is_file()), None)


def install() -> float | None:
    """Install slurm-wlm and munge with apt-get when a daemon or client is missing (root only); the seconds
    it took, or None when nothing was missing."""
    missing = [n for n in (*DAEMONS, *CLIENTS) if _which(n) is None]
    if not missing:
        return None
    t0 = time.monotonic()
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable(f"{', '.join(missing)} not installed, and installing needs root and apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "slurm-wlm", "munge"]):
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if done.returncode != 0:
            raise Unavailable(f"`{' '.join(cmd)}` failed: {(done.stderr or done.stdout).strip()[-800:]}")
    return time.monotonic() - t0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SlurmCluster:
    """A running cluster: its folder, config file and node name, and the environment its commands need."""

    root: Path
    conf: Path
    node: str
    started_s: float = 0.0
    """seconds from the first daemon's start to an idle node."""
    pid_files: list[Path] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """This process's environment with ``SLURM_CONF`` pointing at the cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, check: bool = True) -> str:
        """Run a Slurm command (``scontrol``, ``squeue``, ...) against this cluster; its stdout."""
        done = subprocess.run(list(cmd), capture_output=True, text=True, env=self.env, timeout=60)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def task_pids(self, job: str) -> list[int]:
        """The pids of the Python processes that job ``job`` (``123`` or an array task ``123_4``) runs in its
        step, found through their environment (``SLURM_JOB_ID`` or ``SLURM_ARRAY_JOB_ID``/``_TASK_ID``)."""
        base, _, task = job.partition("_")
        want = {f"SLURM_ARRAY_JOB_ID={base}", f"SLURM_ARRAY_TASK_ID={task}"} if task else {f"SLURM_JOB_ID={base}"}
        found = []
        for proc in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                if not (proc / "comm").read_text().startswith("python"):
                    continue
                env = set((proc / "environ").read_bytes().decode(errors="replace").split("\0"))
                if want <= env and any(e.startswith("SLURM_STEP_ID=") for e in env):
                    found.append(int(proc.name))
        return found

    def release_requeued(self, job: str, timeout: float = 120.0) -> None:
        """Let requeued job ``job`` start again at once instead of after Slurm's hold of about two minutes,
        but only once its earlier start is gone: every slurmstepd of the job has exited (a release
        before that lets the earlier start's late completion message end the new start as FAILED)."""
        shown = self.run("scontrol", "show", "job", job)
        unique = shown.split("JobId=", 1)[1].split()[0]
        t0 = time.monotonic()
        while any(_cmdline(p).startswith(f"slurmstepd: [{unique}.") for p in Path("/proc").glob("[0-9]*")):
            if time.monotonic() - t0 > timeout:
                raise RuntimeError(f"the earlier start of job {job} did not end within {timeout:.0f} s")
            time.sleep(0.2)
        time.sleep(1.0)  # the completion message, sent before slurmstepd exits, is processed by now
        self.run("scontrol", "update", f"JobId={job}", "StartTime=now")

    def logs(self) -> str:
        """The last lines of every daemon's log (for failure messages)."""
        parts = []
        for p in sorted((self.root / "log").glob("*.log")):
            lines = p.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {p.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    def stop(self) -> None:
        """Stop the daemons this cluster started (slurmd, slurmctld, munged), each by the pid it recorded."""
        for pid_file in reversed(self.pid_files):
            with contextlib.suppress(OSError, ValueError):
                pid = int(pid_file.read_text().split()[0])
                os.kill(pid, signal.SIGTERM)
                for _ in range(50):
                    os.kill(pid, 0)  # raises once it is gone
                    time.sleep(0.1)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _config(root: Path, node: str) -> str:
    return f"""\
ClusterName=embtie-test
SlurmctldHost={node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={root}/ctld
SlurmdSpoolDir={root}/slurmd
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobRequeue=1
KillWait={KILL_WAIT_S}
MinJobAge=3600
NodeName={node} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _daemon(cmd: list[str], cluster: SlurmCluster) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, env=cluster.env, timeout=60)
    if done.returncode != 0:
        cluster.stop()
        raise Unavailable(f"`{' '.join(cmd)}` exited {done.returncode}: {done.stderr.strip()}\n{cluster.logs()}")


def start(root: Path, timeout: float = 90.0) -> SlurmCluster:
    """Start munged, slurmctld and slurmd with their files in ``root``; returns once the node is idle."""
    node = socket.gethostname().split(".")[0]
    for sub in ("munge", "ctld", "slurmd", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # munged checks the permissions of its socket's and log's folders
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = root / "slurm.conf"
    conf.write_text(_config(root, node), encoding="utf-8")
    t0 = time.monotonic()
    cluster = SlurmCluster(root=root, conf=conf, node=node)
    munge_dir = root / "munge"
    cluster.pid_files.append(munge_dir / "munged.pid")
    _daemon([_which("munged") or "munged", "--force", f"--socket={munge_dir}/munge.socket", f"--key-file={key}",
             f"--log-file={root}/log/munged.log", f"--pid-file={munge_dir}/munged.pid",
             f"--seed-file={munge_dir}/munged.seed"], cluster)  # fmt: skip
    cluster.pid_files.append(root / "slurmctld.pid")
    _daemon([_which("slurmctld") or "slurmctld", "-f", str(conf)], cluster)
    cluster.pid_files.append(root / "slurmd.pid")
    _daemon([_which("slurmd") or "slurmd", "-f", str(conf)], cluster)
    state = ""
    while time.monotonic() - t0 < timeout:
        state = cluster.run("sinfo", "--noheader", "--format=%T", check=False).strip()
        if state == "idle":
            cluster.started_s = time.monotonic() - t0
            return cluster
        if state.startswith(("down", "drain")):
            cluster.run("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
        time.sleep(0.5)
    cluster.stop()
    raise Unavailable(f"the node did not become idle within {timeout:.0f} s (state {state!r})\n{cluster.logs()}")
