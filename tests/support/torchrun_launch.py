"""Start ``torchrun --standalone --nproc_per_node=2`` for the multi-process tests, and survive a launcher
that does not exit.

On CI a 2-process gloo run once finished its work (rank 0 printed its summary) and then never exited
(pytorch/pytorch#75097 describes the same teardown hang). So a launch that outlives ``timeout`` gets
SIGABRT in the launcher and every process below it (torchrun starts each worker in a session of its own,
so they are found through /proc, not by process group): ``PYTHONFAULTHANDLER`` makes each Python process
print every thread's stack on the way out, which lands in the captured output. The launch is then
tried once more from clean output folders; the output of the hung attempt is reported as a warning
(stacks included), and a second hang fails the test with both outputs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

TORCHRUN = Path(sys.executable).with_name("torchrun")


SINGLE_NODE = ("--standalone", "--nproc_per_node=2")
"""torchrun's own options for the multi-process tests: one node, two processes."""


class Launch:
    """One torchrun launch in its own process group; ``launcher``: torchrun's own options (the rendezvous,
    nodes and processes; default ``SINGLE_NODE``)."""

    def __init__(self, args: list[str], env: dict[str, str], launcher: tuple[str, ...] = SINGLE_NODE) -> None:
        cmd = [str(TORCHRUN), *launcher, *args]
        env = {**env, "PYTHONFAULTHANDLER": "1"}
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def wait(self, timeout: float) -> tuple[int | None, str]:
        """(exit status, output); status None when it hung and was aborted (output then has the stacks)."""
        try:
            out, _ = self.proc.communicate(timeout=timeout)
            return self.proc.returncode, out.decode(errors="replace")
        except subprocess.TimeoutExpired:
            workers = _descendants(self.proc.pid)
            family = [*workers, self.proc.pid]
            # faulthandler: every process prints its threads' stacks; the workers first and alone, so their
            # stacks reach the shared pipe whole, not interleaved with the launcher's
            _signal(workers, signal.SIGABRT)
            time.sleep(2)
            _signal([self.proc.pid], signal.SIGABRT)
            try:
                out, _ = self.proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                _signal(family, signal.SIGKILL)
                out, _ = self.proc.communicate(timeout=20)
            _signal(family, signal.SIGKILL)  # anything still holding on
            return None, out.decode(errors="replace")


def _descendants(pid: int) -> list[int]:
    """The pids of every process below ``pid`` (Linux /proc), deepest first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return _descendants_of(pid, children)


def _descendants_of(pid: int, children: dict[int, list[int]]) -> list[int]:
    found: list[int] = []
    for child in children.get(pid, []):
        found += [*_descendants_of(child, children), child]
    return found


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def torchrun(args: list[str], env: dict[str, str], outputs: list[Path], *, timeout: float = 240,
             meanwhile: Callable[[], None] | None = None) -> str:  # fmt: skip
    """Run ``torchrun --standalone --nproc_per_node=2 *args`` and return its output; ``meanwhile`` runs in
    this process while the first launch works. Asserts exit status 0. ``outputs`` (the folders the launch
    writes) are emptied before a second try."""
    launch = Launch(args, env)
    if meanwhile is not None:
        meanwhile()
    status, out = launch.wait(timeout)
    if status is None:
        warnings.warn(f"torchrun did not exit within {timeout:.0f} s; retrying once. Its output and stacks:\n"
                      f"{out[-20000:]}", stacklevel=2)  # fmt: skip
        for p in outputs:
            shutil.rmtree(p, ignore_errors=True)
        status, again = Launch(args, env).wait(timeout)
        assert status is not None, f"torchrun hung twice; first:\n{out[-4000:]}\nsecond:\n{again[-4000:]}"
        out = again
    assert status == 0, out[-3000:]
    return out
