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


def _native_cpu_bf16() -> bool:
    """Whether oneDNN has native bf16 matmul kernels on this CPU (AVX-512 BF16 or AMX; not Zen 3's AVX2)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch built without oneDNN: assume the slow path
        return False


def run(device_name: str = "auto") -> Section:
    device = pick_device(device_name)
    size = 8192 if device.type == "cuda" else 2048
    sizes = {name: size for name in DTYPES}
    slow_bf16 = device.type == "cpu" and not _native_cpu_bf16()
    if slow_bf16:  # a reference kernel at about 1 GFLOP/s: 2048^3 would take minutes and say nothing more
        sizes["bf16"] = 512
    peaks = {name: matmul_peak(dt, device, sizes[name]) for name, dt in DTYPES.items()}
    rows = [[name, f"{sizes[name]}^3", fmt(p / 1e9, 1)] for name, p in peaks.items()]
    note = (" This CPU has no native bf16 matmul kernels (oneDNN reports none), so bf16 runs a reference kernel,"
            " timed at 512^3." if slow_bf16 else "")  # fmt: skip
    body = (
        "Best of 5 timed batches of 3 square matmuls (the machine's other load included, so this is the "
        f"peak *available* while the benchmarks ran).{note}\n\n" + md_table(["dtype", "size", "GFLOP/s"], rows)
    )
    return Section("Matrix-multiply peak", body, {f"peak_gflops[{k}]": v / 1e9 for k, v in peaks.items()})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="auto")
    print(run(p.parse_args().device).body)


if __name__ == "__main__":
    main()
