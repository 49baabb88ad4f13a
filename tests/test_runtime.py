"""``runtime.exit_process``: in a torchrun worker (WORLD_SIZE > 1) the process ends without the interpreter's
shutdown, its output flushed; elsewhere it is a plain ``sys.exit``."""

import os
import subprocess
import sys

import pytest

SCRIPT = """
import atexit, sys
from embtie.runtime import exit_process
atexit.register(lambda: print("shutdown ran", flush=True))
print("work done")          # buffered: exit_process must flush it
print("to stderr", file=sys.stderr)
exit_process(3)
"""


@pytest.mark.parametrize(("world", "shutdown"), [("2", False), ("1", True), (None, True)])
def test_exit_process_skips_the_shutdown_only_in_a_worker(world, shutdown):
    env = {k: v for k, v in os.environ.items() if k != "WORLD_SIZE"}
    if world is not None:
        env["WORLD_SIZE"] = world
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert "work done" in proc.stdout and "to stderr" in proc.stderr
    assert ("shutdown ran" in proc.stdout) is shutdown


def test_the_command_line_exits_through_it():
    proc = subprocess.run([sys.executable, "-m", "embtie", "strategies", "--nope"], capture_output=True, text=True,
                          env={**os.environ, "WORLD_SIZE": "2"}, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "unrecognized arguments: --nope" in proc.stderr


TEARDOWN = """
import os, sys, tempfile, time
import torch.distributed as dist
import torch.multiprocessing as mp
from embtie import runtime

def worker(rank, world, path, claimed_world, hang_destroy, timeout_s):
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=world)
    if hang_destroy:
        dist.destroy_process_group = lambda *a, **k: time.sleep(3600)
    rt = runtime.Runtime(rank=rank, world_size=claimed_world, owns_group=True)
    start = time.monotonic()
    runtime.teardown(rt, finished=True, timeout_s=timeout_s)
    line = f"rank {rank} left after {time.monotonic() - start:.1f} s; initialized {dist.is_initialized()}\\n"
    os.write(1, line.encode())  # one write: print's text and newline, two writes, interleaved across the ranks
    sys.stderr.flush()
    os._exit(0)  # as a torchrun worker ends (runtime.exit_process): gloo's thread destructors can abort at exit

world, claimed, hang, timeout_s = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", float(sys.argv[4]))
path = os.path.join(tempfile.mkdtemp(), "rendezvous")
mp.start_processes(worker, args=(world, path, claimed, hang, timeout_s), nprocs=world, start_method="fork")
"""


def _teardown(world: int, claimed: int, hang_destroy: bool, timeout_s: float) -> subprocess.CompletedProcess:
    args = [sys.executable, "-c", TEARDOWN, str(world), str(claimed), "1" if hang_destroy else "0", str(timeout_s)]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def _left_after(out: str) -> dict[int, tuple[float, bool]]:
    """rank -> (seconds teardown took, whether the group was still initialized after it)."""
    found = {}
    for line in out.splitlines():
        if line.startswith("rank "):
            words = line.split()
            found[int(words[1])] = (float(words[4]), words[-1] == "True")
    return found


def test_teardown_of_a_finished_two_process_run_meets_and_destroys_the_group():
    proc = _teardown(world=2, claimed=2, hang_destroy=False, timeout_s=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    left = _left_after(proc.stdout)
    assert sorted(left) == [0, 1], proc.stdout + proc.stderr
    assert all(seconds < 30 and not initialized for seconds, initialized in left.values()), (left, proc.stderr)
    assert "embtie: note" not in proc.stderr, proc.stderr


def test_teardown_waits_a_bounded_time_for_a_peer_that_never_comes():
    # the group has one process but the run claims two: the second never reaches the exit barrier
    proc = _teardown(world=1, claimed=2, hang_destroy=False, timeout_s=2)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (seconds, initialized), = _left_after(proc.stdout).values()
    assert 2 <= seconds < 15 and not initialized
    assert "not every process reached the end of the run within 2 s" in proc.stderr


def test_teardown_does_not_wait_forever_on_a_destroy_that_never_returns():
    # gloo's native teardown once never returned on CI: the process must still get to exit
    proc = _teardown(world=2, claimed=2, hang_destroy=True, timeout_s=2)
    assert proc.returncode == 0, proc.stderr[-2000:]
    left = _left_after(proc.stdout)
    assert sorted(left) == [0, 1] and all(2 <= seconds < 15 for seconds, _ in left.values()), left
    assert proc.stderr.count("was not destroyed within 2 s") == 2


def test_keep_until_exit_holds_what_a_finished_worker_must_not_free():
    import gc
    import weakref

    from embtie import runtime

    class Trainer:  # stands in for a trainer whose native destructors must not run before os._exit
        pass

    t = Trainer()
    ref = weakref.ref(t)
    runtime.keep_until_exit(t)
    del t
    gc.collect()
    assert ref() is not None
    runtime._KEPT.remove(ref())
    gc.collect()
    assert ref() is None
