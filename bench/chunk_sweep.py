"""Chunk size of the memory-lean loss: time and memory against plain for several tokens-per-chunk.

Tells which chunk size a device wants (``embtie.sharing.chunked_ce.default_chunk``): small chunks keep
memory low, but each chunk costs a fixed number of kernel launches, which matters on a GPU. Memory is
measured on CUDA only (torch.cuda.max_memory_allocated in this process: the caching allocator's
counter is exact); on the CPU use the `loss` section, which measures resident memory in fresh
processes.

    python -m bench.chunk_sweep [--device cuda] [--chunks 256,512,1024,2048,4096] [--repeats 3]
"""

from __future__ import annotations

import argparse

import torch

from bench.common import Section, fmt, interleaved, md_table, pick_device
from bench.loss_memory import Case, _setup, _step
from embtie.sharing.chunked_ce import release_workspace

CASES = [
    Case("tied", 8192, 32768, 512),
    Case("tied", 8192, 32768, 512, dtype="bf16"),
    Case("l2norm", 8192, 32768, 512, dtype="bf16"),
    Case("tied", 8192, 131072, 512),
]


def _peak_extra_mib(case: Case, s, h, t, impl: str, chunk: int | None, device: torch.device) -> float:
    s.zero_grad(set_to_none=True)  # last call's gradients and chunk buffers are not part of the base
    h.grad = None
    release_workspace()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    _call(case, s, h, t, impl, chunk, device)()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def _call(case: Case, s, h, t, impl: str, chunk: int | None, device: torch.device):
    if chunk is None:
        return lambda: _step(case, s, h, t, impl, device)

    def step() -> None:
        s.zero_grad(set_to_none=True)
        h.grad = None
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=case.dtype == "bf16"):
            loss = s.loss(h, t, impl=impl, chunk_size=chunk)
        loss.backward()

    return step


def run(device_name: str = "auto", chunks: tuple[int, ...] = (256, 512, 1024, 2048, 4096), repeats: int = 3) -> Section:
    device = pick_device(device_name)
    rows, figures = [], {}
    for case in CASES:
        print(f"[chunk] {case.label}", flush=True)
        s, h, t = _setup(case, device)
        cands = {"plain": _call(case, s, h, t, "plain", None, device)}
        cands |= {f"chunk {c}": _call(case, s, h, t, "chunked", c, device) for c in chunks}
        tim = interleaved(cands, repeats=repeats, device=device)
        mem = {}
        if device.type == "cuda":
            mem["plain"] = _peak_extra_mib(case, s, h, t, "plain", None, device)
            for c in chunks:
                mem[f"chunk {c}"] = _peak_extra_mib(case, s, h, t, "chunked", c, device)
        for name in cands:
            r = tim.ratio(name, "plain")
            m = fmt(mem[name] / mem["plain"], 3) if mem else "-"
            rows.append([case.label, name, f"{tim.best(name) * 1e3:.2f}", fmt(r, 3), m])
            figures[f"time[{case.label}][{name}]"] = r
        del s, h, t
        if device.type == "cuda":
            torch.cuda.empty_cache()
    body = (
        f"Forward + backward of the output layer; {repeats} interleaved rounds after a warm-up, fastest call of "
        "each. `memory / plain`: extra allocated memory during the step (CUDA only).\n\n"
        + md_table(["case", "impl", "best ms", "time / plain", "memory / plain"], rows)
    )
    return Section("Chunk size of the memory-lean loss", body, figures)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--chunks", default="256,512,1024,2048,4096", help="tokens per chunk, comma-separated")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    sec = run(a.device, tuple(int(c) for c in a.chunks.split(",")), a.repeats)
    print(f"\n## {sec.title}\n\n{sec.body}")


if __name__ == "__main__":
    main()
