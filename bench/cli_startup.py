"""Start-up time of the ``embtie`` command for the commands that must answer at once.

    python -m bench.cli_startup [--repeats 5]

Each command runs ``--repeats`` times in a fresh interpreter (``python -m embtie ...``, this checkout's
src/ first on the path); the table gives the fastest and the median wall-clock time, and whether
torch was imported (it must not be: importing it alone takes 2-4 s on a busy 2-core machine). The
target of issue 39 is under 1 s for each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = (("--version",), ("--help",), ("data", "list"))
PROBE = "import sys, runpy; sys.argv = ['embtie', *sys.argv[1:]]; import atexit; " \
    "atexit.register(lambda: print('TORCH' if 'torch' in sys.modules else 'NOTORCH', file=sys.stderr)); " \
    "runpy.run_module('embtie', run_name='__main__')"  # fmt: skip


def time_command(argv: tuple[str, ...], repeats: int) -> tuple[float, float, bool]:
    """(fastest s, median s, torch imported) of ``embtie ARGV`` over ``repeats`` fresh processes."""
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    times, torch_seen = [], False
    for _ in range(repeats):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        torch_seen |= "TORCH" in done.stderr.split()
    return min(times), statistics.median(times), torch_seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {args.repeats} fresh processes per command")
    print("| command | fastest (s) | median (s) | torch imported |")
    print("|---|---|---|---|")
    for argv in COMMANDS:
        fastest, median, torch_seen = time_command(argv, args.repeats)
        print(f"| embtie {' '.join(argv)} | {fastest:.2f} | {median:.2f} | {'yes' if torch_seen else 'no'} |")


if __name__ == "__main__":
    main()
