"""Shared helpers of the benchmarks: interleaved timing, machine description, markdown tables.

Timings on a shared machine are noisy, so every comparison here is measured *side by side*: the
candidates run alternately (A B C, B C A, C A B, ...) in one process, several rounds. Other jobs can
only add time, so the ratio reported is that of the *fastest* call of each candidate (the least
disturbed one); the median of per-round ratios is kept too. Both wall-clock time and process CPU
time (all threads) are recorded; with one torch thread (``--threads 1``, the default of
``python -m bench``) CPU time excludes the time the process waited for a core.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def _head_commit() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        return rev.stdout.strip()
    except OSError:
        return ""


START_COMMIT = _head_commit()
"""HEAD when the benchmarks were imported (the code they run), not when a section finished."""


@dataclass
class Timings:
    """Seconds per call of each candidate, one entry per repeat (same order for every candidate)."""

    wall: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)

    def best(self, name: str, *, cpu: bool = False) -> float:
        """The fastest call of ``name`` (seconds)."""
        return min((self.cpu if cpu else self.wall)[name])

    def median(self, name: str) -> float:
        return statistics.median(self.wall[name])

    def ratio(self, name: str, base: str, *, cpu: bool = False) -> float:
        """best(name) / best(base): the ratio of the least disturbed calls."""
        return self.best(name, cpu=cpu) / self.best(base, cpu=cpu)

    def ratio_median(self, name: str, base: str, *, cpu: bool = False) -> float:
        """Median over rounds of time(name) / time(base), measured in the same round."""
        src = self.cpu if cpu else self.wall
        return statistics.median(a / b for a, b in zip(src[name], src[base]))


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(
    candidates: dict[str, Callable[[], object]],
    *,
    repeats: int,
    warmup: int = 1,
    device: torch.device | str = "cpu",
) -> Timings:
    """Run each candidate ``warmup`` times, then ``repeats`` rounds in rotating order; time every call."""
    device = torch.device(device)
    names = list(candidates)
    for _ in range(warmup):
        for n in names:
            candidates[n]()
    out = Timings({n: [] for n in names}, {n: [] for n in names})
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            sync(device)
            w0, c0 = time.perf_counter(), time.process_time()
            candidates[n]()
            sync(device)
            out.wall[n].append(time.perf_counter() - w0)
            out.cpu[n].append(time.process_time() - c0)
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: torch.device | str = "cpu") -> dict[str, str]:
    """What the figures were measured on."""
    device = torch.device(device)
    info = {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cpu": f"{cpu_model()}, {os.cpu_count()} logical cores, torch threads = {torch.get_num_threads()}",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": str(device),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    try:
        load = os.getloadavg()
        info["load average at start"] = f"{load[0]:.1f} (other jobs share the cores)"
    except OSError:
        pass
    info["commit"] = START_COMMIT
    try:
        import transformers

        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    return info


def md_table(headers: list[str], rows: list[list[object]]) -> str:
    """A markdown table (floats formatted by the caller)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def python() -> str:
    return sys.executable


def child_env() -> dict[str, str]:
    """Environment of a benchmark subprocess: the parent's, with src/ importable."""
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@dataclass
class Section:
    """One benchmark's output: a title, markdown body (tables + notes), and the figures as a dict."""

    title: str
    body: str
    figures: dict[str, float] = field(default_factory=dict)
    command: str = ""


def section_parser(doc: str | None, large_help: str, repeats: int) -> argparse.ArgumentParser:
    """The command line every benchmark section shares when run alone: --large, --device, --repeats."""
    p = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    p.add_argument("--large", action="store_true", help=large_help)
    p.add_argument("--device", default="auto")
    p.add_argument("--repeats", type=int, default=repeats)
    return p
