"""One writer per folder: the lock that every command which trains a run directory (and ``embtie compare``
for its output folder) holds while it writes there.

The lock is an OS file lock (``filelock``: ``flock`` on the file ``FOLDER/.embtie-lock``) next to an info
file, ``FOLDER/.embtie-lock.json``, that names the holder: host, process id (and that process's start
time, so a reused id is told apart), when it took the lock, the Slurm job (``SLURM_JOB_ID``,
``SLURM_RESTART_COUNT``) when there is one, and its command. A second writer refuses in one line naming
the holder. Both files are removed when the holder releases the lock, on any exit that runs Python's
``finally`` blocks: a normal end, an exception, Ctrl-C (SIGINT) and SIGTERM (turned into ``SystemExit``
while the lock is held).

A stale lock is recognised and taken over with a one-line note:

- the kernel releases the file lock of a process that died (SIGKILL, a crash): the next writer gets the
  file lock at once and finds the dead holder's info file;
- the file lock is still held but the recorded holder is gone: its process no longer runs on this host
  (a child that inherited the lock's descriptor keeps it alive), or it was an earlier start of this very
  Slurm job (same ``SLURM_JOB_ID``, another ``SLURM_RESTART_COUNT``: a requeued job runs one start at a
  time, on this host or another), or ``squeue`` says its Slurm job has ended. The lock file is then
  replaced by a new one.

Taking, replacing and releasing the lock happen under a short guard lock (``FOLDER/.embtie-lock.guard``),
so that no one judges a lock while another process is between taking it and recording itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from types import FrameType
from typing import Any

from filelock import FileLock, Timeout

from embtie.errors import EmbtieError
from embtie.files import write_atomic

LOCK = ".embtie-lock"
INFO = ".embtie-lock.json"
GUARD = ".embtie-lock.guard"
GUARD_TIMEOUT = 30.0
"""seconds to wait for another process that is taking, replacing or releasing the lock."""


class LockError(EmbtieError):
    """Another process writes this folder (or the lock cannot be judged); the message names the holder."""


def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux ``/proc``), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


@dataclass(frozen=True, kw_only=True)
class Holder:
    """Who holds a lock: what the info file records."""

    host: str
    pid: int
    since: str
    """when the lock was taken, local time, ISO 8601."""
    what: str = "writing"
    """what the holder does there ("training", "comparison")."""
    command: str
    process_start: str | None = None
    slurm_job_id: str | None = None
    slurm_restart_count: str | None = None

    @classmethod
    def me(cls, what: str, command: str) -> Holder:
        env = os.environ
        return cls(
            host=socket.gethostname(),
            pid=os.getpid(),
            since=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            what=what,
            command=command,
            process_start=_process_start(os.getpid()),
            slurm_job_id=env.get("SLURM_JOB_ID"),
            slurm_restart_count=env.get("SLURM_RESTART_COUNT"),
        )

    @classmethod
    def read(cls, path: Path) -> Holder | None:
        """The holder recorded in info file ``path``; None when there is none or it cannot be read."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls(**{f.name: raw[f.name] for f in fields(cls) if f.name in raw})
        except (OSError, ValueError, TypeError):
            return None

    def describe(self) -> str:
        job = f", Slurm job {self.slurm_job_id}" if self.slurm_job_id else ""
        return f"pid {self.pid} on host {self.host}{job}, since {self.since}"

    def is_me(self) -> bool:
        return self.host == socket.gethostname() and self.pid == os.getpid()


def _slurm_job_ended(job: str) -> bool:
    """Whether ``squeue`` (when this machine has it) no longer lists Slurm job ``job`` as pending or running."""
    squeue = shutil.which("squeue")
    if squeue is None:
        return False
    try:
        out = subprocess.run([squeue, "-h", "-j", job, "-o", "%T"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    if out.returncode != 0:
        return "invalid job id" in out.stderr.lower()
    states = out.stdout.split()
    return not any(s in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED") for s in states)


def gone(holder: Holder) -> str | None:
    """Why the recorded holder no longer writes (its process is gone, its Slurm job was requeued or has
    ended), or None when it may still be running."""
    if holder.is_me():
        return None
    if requeued := _earlier_start_of_this_job(holder):
        return requeued
    if holder.host == socket.gethostname():
        if not _pid_alive(holder.pid):
            return "its process is gone"
        start = _process_start(holder.pid)
        if holder.process_start is not None and start is not None and start != holder.process_start:
            return "its process is gone (the pid now belongs to another process)"
        return None
    if holder.slurm_job_id and _slurm_job_ended(holder.slurm_job_id):
        return f"Slurm job {holder.slurm_job_id} has ended"
    return None


def _earlier_start_of_this_job(holder: Holder) -> str | None:
    """Why ``holder`` was an earlier start of this process's own Slurm job (same ``SLURM_JOB_ID``, another
    ``SLURM_RESTART_COUNT``: Slurm runs one start of a job at a time, so a requeued job's old lock is
    stale on any host), or None. Another task of this very start (same restart count) is not stale."""
    mine = os.environ.get("SLURM_JOB_ID")
    if not holder.slurm_job_id or holder.slurm_job_id != mine:
        return None
    restarts = os.environ.get("SLURM_RESTART_COUNT")
    if (holder.slurm_restart_count or "0") == (restarts or "0"):
        return None
    return f"Slurm job {mine} was requeued and this is its new start (restart {restarts or 0})"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _guard(folder: Path) -> Iterator[None]:
    """The short guard lock around taking, replacing and releasing the lock; its file is removed while
    still held (a waiter that locked the removed file sees it unlinked and tries again)."""
    path = folder / GUARD
    guard = FileLock(path, timeout=GUARD_TIMEOUT)
    try:
        guard.acquire()
    except Timeout:
        raise LockError(
            f"another process has been taking or releasing the lock of {folder} for {GUARD_TIMEOUT:g} s; "
            f"if none is running, delete {path} and run again"
        ) from None
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        guard.release()


class FolderLock:
    """The writer lock of one folder; ``what`` names the activity in messages ("training", "comparison")."""

    def __init__(self, folder: Path, what: str, command: str) -> None:
        self.folder, self.what, self.command = Path(folder), what, command
        self.path, self.info = self.folder / LOCK, self.folder / INFO
        self._lock: FileLock | None = None
        self._inode: tuple[int, int] | None = None
        self._made: list[Path] = []
        """the folders that taking the lock created (removed again on release when still empty)."""

    def acquire(self) -> None:
        """Take the lock (replacing a stale one, with a note on stderr) or raise ``LockError``."""
        self._made = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._acquire()
        except BaseException:
            self._remove_made()
            raise

    def _acquire(self) -> None:
        with _guard(self.folder):
            for _ in range(2):
                lock = FileLock(self.path, timeout=0)
                try:
                    lock.acquire(blocking=False)
                except Timeout:
                    self._replace_stale()  # returns only when the held lock was stale and is gone now
                    continue
                self._record(lock)
                return
        raise self._refusal(Holder.read(self.info))

    def _record(self, lock: FileLock) -> None:
        """Write the info file of a lock just taken (a leftover one means its holder died holding it)."""
        old = Holder.read(self.info)
        try:
            write_atomic(self.info, json.dumps(asdict(Holder.me(self.what, self.command)), indent=1))
            st = self.path.stat()
        except BaseException:
            lock.release()
            raise
        self._lock, self._inode = lock, (st.st_dev, st.st_ino)
        if old is not None and not old.is_me():
            _note(f"took over the stale lock of {self.folder} ({old.describe()}: it ended without releasing it)")

    def _replace_stale(self) -> None:
        """The lock is held: remove it when its recorded holder is gone, else raise the refusal."""
        holder = Holder.read(self.info)
        why = None if holder is None else gone(holder)
        if holder is None or why is None:
            raise self._refusal(holder)
        _note(f"took over the stale lock of {self.folder} ({holder.describe()}: {why})")
        for p in (self.info, self.path):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()

    def _refusal(self, holder: Holder | None) -> LockError:
        if holder is None:
            return LockError(
                f"{self.folder} is locked by a process that left no readable record in {self.info}; if no embtie "
                f"process uses the folder, delete {self.path} and run again"
            )
        return LockError(
            f"{self.folder} is in use ({holder.what}) by {holder.describe()}, running `{holder.command}`; wait for "
            f"it to end or stop it, or write to another folder; if that process is gone, delete {self.path} and "
            "run again"
        )

    def release(self) -> None:
        """Remove the info and lock files (only if they are still this holder's) and release the lock."""
        lock, self._lock = self._lock, None
        if lock is None:
            return
        try:
            with _guard(self.folder):
                try:
                    st = self.path.stat()
                    mine = (st.st_dev, st.st_ino) == self._inode
                except FileNotFoundError:
                    mine = False
                if mine:  # unlinked while still held: a waiter on this file sees it removed and tries again
                    with contextlib.suppress(FileNotFoundError):
                        self.info.unlink()
                    self.path.unlink()
                lock.release()
        finally:
            if lock.is_locked:
                lock.release(force=True)
            self._remove_made()

    def _remove_made(self) -> None:
        for p in self._made:  # deepest first; a folder that got files stays
            with contextlib.suppress(OSError):
                p.rmdir()
        self._made = []


def command_line() -> str:
    """This process's command, as the user would type it (``embtie train ...``), for the info file."""
    argv = sys.argv
    first = Path(argv[0]) if argv else Path()
    if first.name == "embtie" or (first.name == "__main__.py" and first.parent.name == "embtie"):
        return shlex.join(["embtie", *argv[1:]])
    return shlex.join(argv) or "python"


def _note(text: str) -> None:
    print(f"embtie: note: {text}", file=sys.stderr)


class _SigtermAsExit:
    """While the lock is held in the main thread, SIGTERM raises ``SystemExit(143)`` (so ``finally``
    blocks run and the lock is released) instead of killing the process on the spot."""

    def __init__(self) -> None:
        self.previous: Any = None
        self.installed = False

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (
            signal.SIG_DFL,
            None,
        ):
            self.previous = signal.signal(signal.SIGTERM, _raise_exit)
            self.installed = True

    def __exit__(self, *exc: object) -> None:
        if self.installed:
            signal.signal(signal.SIGTERM, self.previous)


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def hold(folder: Path, what: str, command: str) -> Iterator[None]:
    """Hold the writer lock of ``folder`` for the duration (``LockError`` when another process holds it)."""
    lock = FolderLock(folder, what, command)
    with _SigtermAsExit():
        lock.acquire()
        try:
            yield
        finally:
            lock.release()
