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
