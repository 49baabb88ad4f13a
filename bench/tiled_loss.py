"""The tiled loss (embtie.sharing.tiled_ce) against plain, chunked, Liger-Kernel and Cut Cross-Entropy.

Forward + backward of a tied output layer and its mean cross-entropy on a grid of tokens N and vocabulary
sizes V (d = 768, GPT-2's width, and the reference shape 8192 x 32768 x 512 of BENCHMARKS-cuda.md), fp32
and bf16, smallest first, until the section's time budget is spent. Every method of a case runs in one
process, alternating round after round (bench.common.interleaved): time = median over rounds, and the
ratio to plain is the median of the per-round ratios. Memory: on CUDA, one step per method after
``torch.cuda.reset_peak_memory_stats``: extra = peak allocated during the step minus allocated before it
(x, W, targets and what the process already holds). A method whose predicted extra memory does not fit
(plain's N x V logits) is skipped with that reason, one that runs out of memory is noted.

In bf16, embtie's losses run under autocast (float32 parameters, bf16 matmuls), Liger and CCE get bf16
casts of x and W made inside the step (as autocast does for F.linear).

On the CPU (the campaign's dry run) the tiled loss runs in Triton's interpreter at one tiny case.

    python -m bench.tiled_loss [--device cuda] [--repeats 3] [--budget-s 200] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from bench.common import Section, fmt, interleaved, md_table, pick_device
from bench.lce_anchor import CUDA_EXTRAS, _external
from embtie import sharing

METHODS = ("plain", "chunked", "tiled")


@dataclass(frozen=True)
class Case:
    tokens: int
    vocab: int
    dim: int
    dtype: str

    @property
    def label(self) -> str:
        return f"N={self.tokens} V={self.vocab} d={self.dim} {self.dtype}"

    def plain_bytes(self) -> float:
        """Plain's extra memory, predicted: the N x V logits in the compute dtype, their float32 copy, softmax
        and gradient (about 14 bytes per logit in bf16, 12 in fp32)."""
        return self.tokens * self.vocab * (14 if self.dtype == "bf16" else 12)


def cases(tiny: bool = False) -> list[Case]:
    """The grid, smallest first: the reference shape, then d = 768 up to N = 65,536 and V = 262,144."""
    if tiny:
        return [Case(96, 320, 48, "fp32"), Case(96, 320, 48, "bf16")]
    shapes = [(8192, 32768, 512), (4096, 50257, 768), (16384, 131072, 768), (65536, 65536, 768),
              (16384, 262144, 768), (65536, 262144, 768)]  # fmt: skip
    return [Case(n, v, d, dt) for n, v, d in shapes for dt in ("bf16", "fp32")]


def _methods(case: Case, device: torch.device) -> tuple[list[str], list[str]]:
    """The methods that run this case, and one note per method left out (and why)."""
    methods, notes = list(METHODS), []
    if device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
        if case.plain_bytes() > 0.6 * free:
            methods.remove("plain")
            notes.append(f"{case.label}: plain skipped, its ~{case.plain_bytes() / 2**30:.0f} GiB of logits do not fit")
        for name, module in CUDA_EXTRAS.items():
            if _external(name) is None:
                notes.append(f"{name} skipped: {module} is not installed")
            elif name == "cce" and case.dtype != "bf16":
                notes.append(f"cce skipped at {case.dtype}: Cut Cross-Entropy's backward needs bf16 or fp16 inputs")
            else:
                methods.append(name)
    return methods, notes


def _loss(method: str, case: Case, s: sharing.SharingStrategy, device: torch.device) -> Callable:
    """(h (N, d), targets (N,)) -> 0-d mean cross-entropy of the tied head by ``method``."""
    bf16 = case.dtype == "bf16"
    if method in METHODS:

        def ours(h: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                return s.loss(h, t, impl=method)

        return ours
    fn = _external(method)
    assert fn is not None
    w = s.head().weight

    def theirs(h: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return fn(h.to(torch.bfloat16), w.to(torch.bfloat16), t) if bf16 else fn(h, w, t)

    return theirs


def measure(case: Case, device: torch.device, repeats: int) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """({method: median s}, {method: extra MiB (CUDA)}, notes) of one case."""
    methods, notes = _methods(case, device)
    torch.manual_seed(0)
    s = sharing.build("tied", vocab_size=case.vocab, dim=case.dim).to(device)
    h = torch.randn(case.tokens, case.dim, device=device, requires_grad=True)
    t = torch.randint(0, case.vocab, (case.tokens,), device=device)
    fns = {m: _loss(m, case, s, device) for m in methods}

    def step(fn: Callable) -> None:
        s.zero_grad(set_to_none=True)
        h.grad = None
        fn(h, t).float().backward()

    extra: dict[str, float] = {}
    for m in list(fns):
        try:
            if device.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                before = torch.cuda.memory_allocated()
                step(fns[m])
                torch.cuda.synchronize()
                extra[m] = (torch.cuda.max_memory_allocated() - before) / 2**20
            else:
                step(fns[m])
        except torch.cuda.OutOfMemoryError:
            notes.append(f"{case.label}: {m} ran out of memory")
            del fns[m]
        except Exception as e:  # a library failing at this case is a finding; the others still run
            notes.append(f"{case.label}: {m} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            del fns[m]
        finally:
            s.zero_grad(set_to_none=True)
            h.grad = None
    tim = interleaved({m: (lambda f=f: step(f)) for m, f in fns.items()}, repeats=repeats, warmup=0, device=device)
    return {m: tim.median(m) for m in fns}, extra, notes


def _triton_note(device: torch.device) -> str:
    """Which triton runs the tiled loss here (the GPU machine's own, which torch's inductor uses too)."""
    try:
        import triton
    except ImportError:
        return "triton is not installed: the tiled loss cannot run (pip install -e '.[gpu]')"
    where = "Triton's interpreter on the CPU" if device.type == "cpu" else "compiled for the GPU"
    return f"tiled: triton {triton.__version__}, {where}"


def run(device_name: str = "auto", repeats: int = 3, budget_s: float | None = None, tiny: bool = False) -> Section:
    """The table over ``cases`` until ``budget_s`` seconds have passed (the cases left are named)."""
    device = pick_device(device_name)
    if device.type == "cpu":  # the dry run: the kernels in Triton's interpreter
        os.environ["TRITON_INTERPRET"] = "1"
    rows, figures, notes, left = [], {}, [_triton_note(device)], []
    t0 = time.perf_counter()
    for case in cases(tiny or device.type == "cpu"):
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            left.append(case.label)
            continue
        print(f"[tiled_loss] {case.label}", flush=True)
        times, extra, case_notes = measure(case, device, repeats)
        notes += [n for n in case_notes if n not in notes]
        base = times.get("plain")
        for m, sec in times.items():
            ratio = sec / base if base else float("nan")
            mem = extra.get(m)
            shown = fmt(ratio, 3) if base else ""
            rows.append([case.label, m, fmt(1e3 * sec, 2), shown, "n/a" if mem is None else fmt(mem, 0)])
            if base:
                figures[f"time_ratio[{case.label}][{m}]"] = ratio
            if mem is not None:
                figures[f"extra_mib[{case.label}][{m}]"] = mem
        print("  " + ", ".join(f"{m} {1e3 * s:.2f} ms" for m, s in times.items()), flush=True)
    body = (
        "Forward + backward of a tied output layer and its mean cross-entropy; the methods alternate in one "
        f"process ({repeats} rounds). `/ plain`: median step time over plain's (empty where plain did not fit). "
        "`extra MiB`: peak torch.cuda.max_memory_allocated during one step minus what was allocated before it.\n\n"
        + md_table(["case", "method", "median ms", "/ plain", "extra MiB"], rows)
        + (f"\n\nNot measured (time budget spent): {', '.join(left)}." if left else "")
        + "".join(f"\n\n{n}" for n in notes)
    )
    return Section("Tiled loss vs plain, chunked, Liger-Kernel and Cut Cross-Entropy", body, figures)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=None, help="start no new case after this many seconds")
    p.add_argument("--tiny", action="store_true", help="one tiny case per dtype (seconds)")
    a = p.parse_args()
    print(run(a.device, a.repeats, a.budget_s, a.tiny).body)


if __name__ == "__main__":
    main()
