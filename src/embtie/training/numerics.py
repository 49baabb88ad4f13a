"""Which CPU and kernels made a run: the CPU's model name, the instruction set torch dispatches its CPU
kernels to, the environment variables that override that choice, the thread count and torch's version.

Training is deterministic on one machine, but another CPU model (or ``ATEN_CPU_CAPABILITY=avx2`` on the
same one) takes other kernel paths, whose rounding differs; a few hundred steps amplify that into
per-seed values several percent apart. Every run's summary.json records these facts under ``numerics``
so a report can say which machine and kernels made its runs, and when they mixed several."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import torch

KERNEL_ENV = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR")
"""environment variables that change which CPU kernels torch (ATen, oneDNN, MKL) runs."""


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux: /proc/cpuinfo's "model name"; elsewhere the platform's processor)."""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def numerics() -> dict[str, Any]:
    """The numerics of this process now: ``{"cpu": ..., "cpu_capability": ..., "kernel_env": {...},
    "threads": ..., "torch": ...}`` (``kernel_env`` holds only the variables that are set)."""
    return {
        "cpu": cpu_model(),
        "cpu_capability": str(torch.backends.cpu.get_cpu_capability()),
        "kernel_env": {k: os.environ[k] for k in KERNEL_ENV if k in os.environ},
        "threads": torch.get_num_threads(),
        "torch": str(torch.__version__),
    }
