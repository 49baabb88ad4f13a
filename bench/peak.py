"""The measured matrix-multiply peak of this machine (the physical limit model FLOP/s are compared to).

python -m bench.peak [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import time

import torch

from bench.common import Section, fmt, md_table, pick_device, sync

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def matmul_peak(dtype: torch.dtype, device: torch.device, size: int = 2048, repeats: int = 5) -> float:
    """Best FLOP/s of a (size x size) @ (size x size) matmul over ``repeats`` timed batches."""
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    a @ b
    inner = 3
    best = 0.0
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        for _ in range(inner):
            a @ b
        sync(device)
        best = max(best, inner * 2 * size**3 / (time.perf_counter() - t0))
    return best


def run(device_name: str = "auto") -> Section:
    device = pick_device(device_name)
    size = 8192 if device.type == "cuda" else 2048
    peaks = {name: matmul_peak(dt, device, size) for name, dt in DTYPES.items()}
    rows = [[name, f"{size}^3", fmt(p / 1e9, 1)] for name, p in peaks.items()]
    body = (
        "Best of 5 timed batches of 3 square matmuls (the machine's other load included, so this is the "
        "peak *available* while the benchmarks ran).\n\n" + md_table(["dtype", "size", "GFLOP/s"], rows)
    )
    return Section("Matrix-multiply peak", body, {f"peak_gflops[{k}]": v / 1e9 for k, v in peaks.items()})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="auto")
    print(run(p.parse_args().device).body)


if __name__ == "__main__":
    main()
