"""The fused-loss anchors side by side: embtie's memory-lean loss against torch's linear_cross_entropy.

Output layer forward + backward of a tied head (logits x @ W^T, mean cross-entropy), by:
- ``embtie``: ``Sharing.loss(impl="chunked")`` (embtie.sharing.chunked_ce);
- ``torch_chunked``: ``F.linear_cross_entropy(..., options=nn.LinearCrossEntropyOptions())`` (torch's
  chunked path with its default, per-device options);
- ``torch_ref``: ``F.linear_cross_entropy(...)`` with its default ``options=None`` (linear + cross_entropy);
- ``plain``: ``Sharing.loss(impl="plain")`` (the N x V logits, then F.cross_entropy);
- on CUDA, when installed: ``liger`` (Liger-Kernel's fused linear cross-entropy) and ``cce`` (Apple's
  Cut Cross-Entropy); a line says which are skipped.

Times: the methods alternate in one process, round after round (bench.common.interleaved); the ratio
to torch_chunked is the median over rounds of the per-round ratio. Memory: one forward + backward per
method in a fresh subprocess (peak RSS, or torch.cuda.max_memory_allocated, minus that before the step).
In bf16 embtie and plain run under autocast (fp32 parameters, bf16 matmuls), and the others are given
bf16 casts of x and W made inside the timed step, which is what autocast does for F.linear.

    python -m bench.lce_anchor [--quick] [--large] [--device cpu|cuda] [--repeats R]
    python -m bench --only lce_anchor [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from bench.common import ROOT, Section, Timings, child_env, fmt, interleaved, md_table, pick_device, python
from bench.loss_memory import _peak_rss_mib
from embtie import sharing

TORCH_LCE = hasattr(F, "linear_cross_entropy")  # foreign: torch's own fused op (a recent torch)
BASE = "torch_chunked" if TORCH_LCE else "plain"
"""the method every ratio is taken against: torch's fused op, or plain where the installed torch lacks it
(the GPU machines lent to this project have their own, older torch)."""
TORCH_METHODS = ("torch_chunked", "torch_ref")
CUDA_EXTRAS = {"liger": "liger_kernel", "cce": "cut_cross_entropy"}


@dataclass
class Case:
    tokens: int
    vocab: int
    dim: int
    dtype: str = "fp32"
    methods: tuple[str, ...] = ("embtie", BASE)

    @property
    def label(self) -> str:
        return f"tied N={self.tokens} V={self.vocab} d={self.dim} {self.dtype}"


def cases(quick: bool = False, large: bool = False, tiny: bool = False) -> list[Case]:
    """The reference shape with every method, then a GPT-2-like head, bf16 and a narrow-vocabulary head
    (``tiny``: one small case of every method, seconds: the GPU campaign's dry run)."""
    every = tuple(m for m in ("embtie", "torch_chunked", "torch_ref", "plain") if TORCH_LCE or m not in TORCH_METHODS)
    if tiny:
        return [Case(128, 1024, 64, methods=every)]
    if quick:
        return [Case(2048, 32768, 512, methods=every), Case(256, 8192, 256, "bf16")]
    out = [
        Case(8192, 32768, 512, methods=every),
        Case(1024, 50257, 768),
        Case(512, 32768, 512, "bf16"),
        Case(8192, 4096, 1024),
    ]
    if large:
        out += [Case(4096, 50257, 768, methods=every), Case(8192, 32768, 512, "bf16")]
    return out


def _setup(case: Case, device: torch.device, seed: int = 0):
    torch.manual_seed(seed)
    s = sharing.build("tied", vocab_size=case.vocab, dim=case.dim).to(device)
    h = torch.randn(case.tokens, case.dim, device=device, requires_grad=True)
    t = torch.randint(0, case.vocab, (case.tokens,), device=device)
    return s, h, t


def _external(name: str) -> Callable | None:
    """The loss function (x (N, d), W (V, d), targets (N,)) -> 0-d of an optional CUDA library, or None."""
    if importlib.util.find_spec(CUDA_EXTRAS[name]) is None:
        return None
    if name == "liger":
        from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy

        return lambda x, w, t: liger_fused_linear_cross_entropy(x, w, t)
    from cut_cross_entropy import linear_cross_entropy

    return lambda x, w, t: linear_cross_entropy(x, w, t)


def loss_fn(method: str, case: Case, s, device: torch.device) -> Callable:
    """(h (N, d), targets (N,)) -> 0-d mean cross-entropy of the tied head by ``method``."""
    bf16 = case.dtype == "bf16"

    def cast(x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.bfloat16) if bf16 else x

    if method in ("embtie", "plain"):
        impl = "chunked" if method == "embtie" else "plain"

        def ours(h, t):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                return s.loss(h, t, impl=impl)

        return ours
    w = s.head().weight  # tied: the embedding matrix itself, no scales
    if method in (BASE, "torch_ref"):
        opts = torch.nn.LinearCrossEntropyOptions() if method == BASE else None
        return lambda h, t: F.linear_cross_entropy(cast(h), cast(w), t, options=opts)
    fn = _external(method)
    if fn is None:
        raise ValueError(f"{method}: pip install {CUDA_EXTRAS[method].replace('_', '-')} to compare with it")
    return lambda h, t: fn(cast(h), cast(w), t)


def _step(fn: Callable, s, h, t) -> None:
    s.zero_grad(set_to_none=True)
    h.grad = None
    fn(h, t).float().backward()


def available(case: Case, device: torch.device) -> tuple[tuple[str, ...], list[str]]:
    """The case's methods plus the CUDA libraries found (on CUDA), and one line per library skipped."""
    methods, notes = list(case.methods), []
    if not TORCH_LCE:
        notes.append(f"torch_chunked, torch_ref skipped: torch {torch.__version__} has no F.linear_cross_entropy")
    if device.type == "cuda":
        for name, module in CUDA_EXTRAS.items():
            if importlib.util.find_spec(module) is None:
                notes.append(f"{name} skipped: {module} is not installed (pip install {module.replace('_', '-')})")
            elif name == "cce" and case.dtype != "bf16":  # seen on an H200: its backward asserts bf16/fp16
                notes.append(f"cce skipped at {case.dtype}: Cut Cross-Entropy's backward needs bf16 or fp16 inputs")
            else:
                methods.append(name)
    return tuple(methods), notes


def _child(args: argparse.Namespace) -> None:
    """Runs in a fresh process: one forward + backward of one method; prints its peak memory as JSON."""
    torch.set_num_threads(args.threads)
    case = Case(args.tokens, args.vocab, args.dim, args.dtype)
    device = pick_device(args.device)
    s, h, t = _setup(case, device)
    fn = loss_fn(args.method, case, s, device)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.max_memory_allocated() / 2**20 if cuda else _peak_rss_mib()
    _step(fn, s, h, t)
    if cuda:
        torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else _peak_rss_mib()
    print(json.dumps({"base_mib": base, "peak_mib": peak, "extra_mib": peak - base}))


def peak_memory(case: Case, method: str, device: torch.device) -> dict[str, float]:
    """Peak memory (MiB) of one forward + backward of ``method`` in a fresh subprocess."""
    cmd = [python(), "-m", "bench.lce_anchor", "--child", "--method", method, "--dtype", case.dtype]
    cmd += ["--tokens", str(case.tokens), "--vocab", str(case.vocab), "--dim", str(case.dim)]
    cmd += ["--device", str(device), "--threads", str(torch.get_num_threads())]
    out = subprocess.run(cmd, cwd=ROOT, env=child_env(), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"memory child failed ({method}, {case.label}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _timings(case: Case, methods: tuple[str, ...], device: torch.device, repeats: int) -> Timings:
    s, h, t = _setup(case, device)
    fns = {m: loss_fn(m, case, s, device) for m in methods}
    return interleaved({m: (lambda f=f: _step(f, s, h, t)) for m, f in fns.items()}, repeats=repeats, device=device)


def measure(case: Case, device: torch.device, repeats: int, memory: bool = True) -> tuple[list, list, dict]:
    """Time rows, memory rows and figures of one case (see the module docstring)."""
    methods, _ = available(case, device)
    tim = _timings(case, methods, device, repeats)
    mem = {m: peak_memory(case, m, device) for m in methods} if memory else {}
    rows, mem_rows, figures = [], [], {}
    for m in methods:
        r_wall, r_cpu = tim.ratio_median(m, BASE), tim.ratio_median(m, BASE, cpu=True)
        med_cpu = statistics.median(tim.cpu[m])
        rows.append([case.label, m, fmt(tim.median(m), 2), fmt(med_cpu, 2), fmt(r_wall, 3), fmt(r_cpu, 3)])
        figures[f"time_ratio[{case.label}][{m}]"] = r_wall
        figures[f"cpu_ratio[{case.label}][{m}]"] = r_cpu
        if m in mem:
            extra, base = mem[m]["extra_mib"], max(mem[BASE]["extra_mib"], 1e-9)
            mem_rows.append([case.label, m, fmt(extra, 0), fmt(mem[m]["peak_mib"], 0), fmt(extra / base, 3)])
            figures[f"mem_ratio[{case.label}][{m}]"] = extra / base
    return rows, mem_rows, figures


def _summary(case: Case, figures: dict[str, float]) -> str:
    """One line: embtie's time and memory as a ratio of torch_chunked's."""
    key = f"[{case.label}][embtie]"
    mem = figures.get(f"mem_ratio{key}")
    return (
        f"{case.label}: embtie / {BASE} time {figures[f'time_ratio{key}']:.3f} (wall), "
        f"{figures[f'cpu_ratio{key}']:.3f} (CPU)" + ("" if mem is None else f", extra memory {mem:.3f}")
    )


def run(
    device_name: str = "auto", repeats: int = 2, quick: bool = False, large: bool = False, tiny: bool = False
) -> Section:
    device = pick_device(device_name)
    rows, mem_rows, figures, notes, summary = [], [], {}, [], []
    for case in cases(quick, large, tiny):
        print(f"[lce_anchor] {case.label}", flush=True)
        notes += [n for n in available(case, device)[1] if n not in notes]
        try:
            r, m, f = measure(case, device, repeats)
        except Exception as e:  # a library failing at this case is a finding; the other cases still run
            notes.append(f"{case.label} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            print("  " + notes[-1], flush=True)
            continue
        rows += r
        mem_rows += m
        figures.update(f)
        summary.append(_summary(case, f))
        print("  " + summary[-1], flush=True)
    what = "torch.cuda.max_memory_allocated" if device.type == "cuda" else "RSS"
    body = (
        "".join(f"- {line}\n" for line in summary)
        + f"\nForward + backward of a tied output layer and its mean cross-entropy. Time: the methods alternate "
        f"in one process ({repeats} rounds after a warm-up); `/ {BASE}` = median over rounds of the "
        f"per-round ratio (wall clock and process CPU time; one torch thread, so CPU time leaves out the "
        f"time spent waiting for a core on this shared machine).\n\n"
        + md_table(["case", "method", "median s (wall)", "median s (CPU)", f"/ {BASE} (wall)", f"/ {BASE} (CPU)"], rows)
        + f"\n\nPeak memory of one forward + backward in a fresh subprocess per method: `extra` = peak {what} "
        f"during the step minus the process's peak just before it; `peak` = the whole process's.\n\n"
        + md_table(["case", "method", "extra MiB", "peak MiB", f"extra / {BASE}"], mem_rows)
        + "".join(f"\n\n{n}" for n in notes)
    )
    return Section("Fused-loss anchors: embtie vs torch's linear_cross_entropy", body, figures)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one round (about a minute)")
    p.add_argument("--large", action="store_true", help="add the GPT-2 head at N=4096 and bf16 at N=8192")
    p.add_argument("--device", default="auto")
    p.add_argument("--repeats", type=int, default=None, help="rounds (default 2; 1 with --quick)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--method", default="embtie", help=argparse.SUPPRESS)
    p.add_argument("--tokens", type=int, default=8192, help=argparse.SUPPRESS)
    p.add_argument("--vocab", type=int, default=32768, help=argparse.SUPPRESS)
    p.add_argument("--dim", type=int, default=512, help=argparse.SUPPRESS)
    p.add_argument("--dtype", default="fp32", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args)
        return
    torch.set_num_threads(args.threads)
    repeats = args.repeats or (1 if args.quick else 2)
    print(run(args.device, repeats, args.quick, args.large).body)


if __name__ == "__main__":
    main()
