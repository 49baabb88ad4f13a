"""The hardware ``embtie plan`` can size a grid for: peak arithmetic, memory and the assumed efficiency.

Peaks are the vendors' dense (no sparsity) figures per device; the CPU's is measured on the project's
own machine (BENCHMARKS.md, "Matrix-multiply peak": the best of three 2048^3 products on one thread of
an Intel Xeon, 160 GFLOP/s fp32 and 1010 GFLOP/s bf16 through AMX). ``mfu`` is the share of that peak
a training step is assumed to reach (model FLOPs utilisation); ``step_overhead_s`` is time every
optimizer step costs whatever its size (kernel launches, the optimizer's passes, host work), which is
what bounds small models on a GPU.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace

from embtie.errors import ConfigError

GIB = 2**30


@dataclass(frozen=True)
class Hardware:
    """One kind of device and how many of them a grid may use at once (one run per device)."""

    name: str
    description: str
    peak_flops: dict[str, float]
    """precision ("fp32", "bf16") -> dense FLOP/s of one device."""
    memory_bytes: float | None
    """memory of one device (None: the host's, not checked)."""
    mfu: float
    """assumed model FLOPs utilisation of a training step."""
    step_overhead_s: float
    """seconds every optimizer step costs on top of its arithmetic."""
    devices: int = 1
    """devices the grid runs on at once: GPUs (``--gpus``) or CPU cores (one single-threaded run each)."""
    peak_source: str = ""

    @property
    def kind(self) -> str:
        """"cpu" or "gpu": which measured throughputs apply."""
        return "cpu" if self.name == "cpu" else "gpu"

    def label(self) -> str:
        unit = "core" if self.kind == "cpu" else "GPU"
        return f"{self.devices} x {self.description} ({self.devices} {unit}{'s' if self.devices != 1 else ''})"


_GPU_OVERHEAD_S = 0.008
"""ptb-gpt-tiny on an H100 (BENCHMARKS-cuda.md): 132,500 tokens/s at 1,024 tokens per step, 7.7 ms a step
for 0.4 GFLOP of arithmetic: a small model's step is launch-bound."""

GPUS: dict[str, Hardware] = {
    "h100": Hardware(
        "h100", "NVIDIA H100 SXM 80 GB", {"bf16": 989e12, "fp32": 67e12}, 80 * GIB, 0.35, _GPU_OVERHEAD_S,
        peak_source="NVIDIA H100 datasheet, dense",
    ),
    "h200": Hardware(
        "h200", "NVIDIA H200 141 GB", {"bf16": 989e12, "fp32": 67e12}, 141 * GIB, 0.35, _GPU_OVERHEAD_S,
        peak_source="NVIDIA H200 datasheet, dense",
    ),
    "a100": Hardware(
        "a100", "NVIDIA A100 SXM 80 GB", {"bf16": 312e12, "fp32": 19.5e12}, 80 * GIB, 0.35, _GPU_OVERHEAD_S,
        peak_source="NVIDIA A100 datasheet, dense",
    ),
}

_CPU_OVERHEAD_S = 0.03
"""seconds a CPU training step costs on top of its arithmetic (optimizer, kernel launches, Python), measured for
issue 42: single-threaded steps of 16 x 64 tokens of the GPT sizes xs, s, m, l, xl and ptb-gpt-tiny,
interleaved in one process on the project's busy 2-core Xeon, lie on one line t = a + b x FLOPs/token with a
16% of ptb-gpt-tiny's step: 31 ms of its 196 ms measured alone (5,226 tokens/s). Without it the estimate of
the smallest rung (xs, 2 MFLOP/token) was 1.6x too fast; with it and mfu 0.40 ptb-gpt-tiny is estimated at
the 5,226 tokens/s measured."""

CPU_CORE = Hardware(
    "cpu", "CPU core (Intel Xeon, AVX-512/AMX)", {"fp32": 160.5e9, "bf16": 1010e9}, None, 0.40, _CPU_OVERHEAD_S,
    peak_source="measured: BENCHMARKS.md, Matrix-multiply peak (one thread)",
)  # fmt: skip
"""One core running one single-threaded run (``train.threads=1``, ``--jobs`` = cores). mfu 0.40 with
``_CPU_OVERHEAD_S`` per step (0.35 and none before the ladders of issue 42 planned small shapes): what the
measured CPU runs in results/ reach with this FLOP count: 0.33-0.40 for the GPT, Transformer, DynamicConv and
RNN translation presets (tests/planning checks them within 30%); the exceptions are the LSTM language model
(0.20: the estimate is 1.8x too fast) and a large-vocabulary GPT (wikitext2-gpt-flat, 0.86: 2.5x too slow),
for which the measurements in ``planning.measured`` are used."""

NAMES = (*GPUS, "cpu:N")


MAX_CORES = 1_000_000
"""the most CPU cores ``cpu:N`` plans for (a bound a machine, or a cluster of them, can honour)."""


def parse(text: str, gpus: int | None = None) -> Hardware:
    """``h100``, ``a100``, ``h200`` (with ``gpus`` devices, default 1) or ``cpu:N`` (N cores); a ConfigError
    with a did-you-mean otherwise."""
    key = text.strip().lower()
    if gpus is not None and gpus < 1:
        raise ConfigError(f"--gpus {gpus} must be >= 1")
    m = re.fullmatch(r"cpu(?::(\d+))?", key)
    if m:
        if gpus is not None:
            raise ConfigError("--gpus is for a GPU; give CPU cores as cpu:N")
        cores = int(m.group(1) or 1)
        if cores < 1 or cores > MAX_CORES:
            raise ConfigError(f"--hardware {text}: give at least one core and at most {MAX_CORES:,} (cpu:N)")
        return replace(CPU_CORE, devices=cores)
    if key in GPUS:
        return replace(GPUS[key], devices=gpus or 1)
    close = difflib.get_close_matches(key, [*GPUS, "cpu"], n=1)
    hint = f"; did you mean {close[0] if close[0] != 'cpu' else 'cpu:N'!r}?" if close else ""
    raise ConfigError(f"unknown hardware {text!r}: choose from {', '.join(NAMES)}{hint}")
