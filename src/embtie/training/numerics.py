"""Which CPU and kernels made a run: the CPU's model name and its family/model numbers, the instruction set
torch dispatches its CPU kernels to, the environment variables that override that choice, the thread count and
torch's version.

Training is deterministic on one machine, but another CPU model (or ``ATEN_CPU_CAPABILITY=avx2`` on the
same one) takes other kernel paths, whose rounding differs; a few hundred steps amplify that into
per-seed values several percent apart. Every run's summary.json records these facts under ``numerics``
so a report can say which machine and kernels made its runs, and when they mixed several. A run on a GPU
adds the GPU's name, the CUDA and cuDNN versions torch was built with and whether TF32 was allowed in
matrix products and convolutions (``gpu``): TF32 rounds fp32 inputs to 10 mantissa bits."""

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


def cpu_id(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's vendor, family and model numbers ("AuthenticAMD family 25 model 17"; None where /proc/cpuinfo
    lacks them). The model name alone does not tell CPUs apart: a cloud's "AMD EPYC" is Zen 3 (family 25,
    models 0-15), Zen 4 (family 25, models 16-31 and 160-175) or Zen 5 (family 26), whose kernels round
    differently even on one instruction set."""
    fields: dict[str, str] = {}
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("vendor_id", "cpu family", "model") and key not in fields and value.strip():
                fields[key] = value.strip()
            elif not line.strip() and fields:  # the first processor's block ends
                break
    except OSError:
        return None
    if "cpu family" not in fields or "model" not in fields:
        return None
    vendor = f"{fields['vendor_id']} " if "vendor_id" in fields else ""
    return f"{vendor}family {fields['cpu family']} model {fields['model']}"


def gpu_numerics(device: torch.device) -> dict[str, Any]:
    """The GPU a CUDA run used: its name, CUDA and cuDNN versions, and the TF32 switches."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "name": torch.cuda.get_device_name(index),
        "cuda": torch.version.cuda,
        "cudnn": cudnn,
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
    }


def numerics(device: torch.device | None = None) -> dict[str, Any]:
    """The numerics of this process now: ``{"cpu": ..., "cpu_capability": ..., "kernel_env": {...},
    "threads": ..., "torch": ..., "cpu_id": ...}`` (``kernel_env`` holds only the variables that are set;
    ``cpu_id`` only where the CPU tells its family and model), and ``"gpu"`` (``gpu_numerics``) when
    ``device`` is a CUDA device."""
    out: dict[str, Any] = {
        "cpu": cpu_model(),
        "cpu_capability": str(torch.backends.cpu.get_cpu_capability()),
        "kernel_env": {k: os.environ[k] for k in KERNEL_ENV if k in os.environ},
        "threads": torch.get_num_threads(),
        "torch": str(torch.__version__),
    }
    if (ident := cpu_id()) is not None:
        out["cpu_id"] = ident
    if device is not None and device.type == "cuda":
        out["gpu"] = gpu_numerics(device)
    return out
