"""Processes that hold a run directory's writer lock (``embtie.rundir.lock``) the way a trainer does, for
the tests of who may write where: a flock on ``FOLDER/.embtie-lock`` and, unless told otherwise, an info
file naming the holder. The holder sleeps until it is killed."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

HOLDER = r"""
import fcntl, json, os, sys, time
folder, info = sys.argv[1], sys.argv[2]
os.makedirs(folder, exist_ok=True)
fd = os.open(os.path.join(folder, ".embtie-lock"), os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
if info != "-":
    try:
        record = json.loads(info)
    except ValueError:
        record = None  # raw text, written as it is
    if isinstance(record, dict):
        record["pid"] = record["pid"] if record.get("pid") is not None else os.getpid()
        info = json.dumps(record)
    with open(os.path.join(folder, ".embtie-lock.json"), "w") as f:
        f.write(info)
print("held", flush=True)
time.sleep(600)
"""


def record(**changes: Any) -> dict[str, Any]:
    """An info file's record of a trainer on this host (pid None: the holder's own pid)."""
    base = {"host": socket.gethostname(), "pid": None, "since": "2030-01-01T09:00:00+0000", "what": "training",
            "command": "embtie train ptb-gpt-tiny --out run"}  # fmt: skip
    return {**base, **changes}


NO_INFO = "-"


def hold(folder: Path, info: dict[str, Any] | str | None = None) -> subprocess.Popen:
    """A process holding the lock of ``folder``; ``info``: the record it writes (None: ``record()``), raw
    text, or ``NO_INFO`` for no info file. Stop it when done (``stop(p)``)."""
    if info is None:
        info = record()
    text = info if isinstance(info, str) else json.dumps(info)
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), text], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline() if p.stdout is not None else ""
    if line.strip() != "held":
        p.kill()
        raise RuntimeError(f"the lock holder did not start: {line!r}")
    return p


def dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(p.stdout)


def stop(p: subprocess.Popen) -> None:
    p.kill()
    p.wait()
