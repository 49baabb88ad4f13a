"""Output layer forward + backward: the chunked loss against the plain N x V computation.

Memory is the peak resident set size (VmHWM) of a *fresh subprocess* per implementation, minus
that process's peak just before the loss (inputs, parameters and torch itself already allocated);
on CUDA it is torch.cuda.max_memory_allocated. Time is measured in this process, the implementations
interleaved.

    python -m bench.loss_memory [--large] [--device cpu|cuda]
    python -m bench.loss_memory --factorized [--memory-only]   # factor_rank = d/4 (ALBERT) cases
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
from dataclasses import dataclass, field

import torch

from bench.common import ROOT, Section, child_env, fmt, interleaved, md_table, pick_device, python, section_parser
from embtie import sharing

IMPLS = ("plain", "chunked", "recompute")


@dataclass
class Case:
    strategy: str
    tokens: int
    vocab: int
    dim: int
    dtype: str = "fp32"
    options: dict = field(default_factory=dict)
    impls: tuple[str, ...] = IMPLS
    memory: bool = True
    timed: bool = True

    @property
    def label(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.options.items())
        name = f"{self.strategy}({opts})" if opts else self.strategy
        return f"{name} N={self.tokens} V={self.vocab} d={self.dim} {self.dtype}"


def default_cases(large: bool) -> list[Case]:
    cases = [
        Case("tied", 8192, 32768, 512),
        Case("cosine", 2048, 32768, 512, options={"bias": True, "softcap": 30.0}, impls=("plain", "chunked")),
        Case("tied", 8192, 32768, 512, dtype="bf16", impls=("plain", "chunked"), memory=False),
        Case("tied", 2048, 131072, 512, impls=("plain", "chunked")),
    ]
    if large:
        cases += large_cases()
    return cases


def large_cases() -> list[Case]:
    """V = 131072 at the target's 8192 tokens (plain needs ~13 GiB; one timed round)."""
    return [Case("tied", 8192, 131072, 512, impls=("plain", "chunked"))]


def factorized_cases() -> list[Case]:
    """Factorized E = A B at r = d/4 (target: the memory-lean loss <= 0.2x plain memory),
    next to the unfactorized strategies at the same size."""
    r = {"factor_rank": 128}
    return [
        Case("tied", 8192, 32768, 512, options=r, impls=("plain", "chunked")),
        Case("l2norm", 8192, 32768, 512, options=r, impls=("plain", "chunked")),
        Case("l2norm", 8192, 32768, 512, impls=("plain", "chunked")),
    ]


def _setup(case: Case, device: torch.device, seed: int = 0):
    torch.manual_seed(seed)
    s = sharing.build(case.strategy, vocab_size=case.vocab, dim=case.dim, **case.options).to(device)
    h = torch.randn(case.tokens, case.dim, device=device, requires_grad=True)
    t = torch.randint(0, case.vocab, (case.tokens,), device=device)
    return s, h, t


def _step(case: Case, s, h, t, impl: str, device: torch.device) -> None:
    s.zero_grad(set_to_none=True)
    h.grad = None
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=case.dtype == "bf16"):
        loss = s.loss(h, t, impl=impl)
    loss.backward()


def _peak_rss_mib() -> float:
    """This process's peak resident set size in MiB: VmHWM of its own address space.

    (ru_maxrss is not used: Linux carries the parent's peak across fork + exec into the child's
    ru_maxrss, so a child of a large benchmark process would report the parent's size.)
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(args: argparse.Namespace) -> None:
    """Runs in a fresh process: one forward + backward, prints the peak memory as JSON."""
    case = Case(args.strategy, args.tokens, args.vocab, args.dim, args.dtype, json.loads(args.options))
    device = pick_device(args.device)
    s, h, t = _setup(case, device)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.max_memory_allocated() / 2**20
    else:
        base = _peak_rss_mib()
    _step(case, s, h, t, args.impl, device)
    if device.type == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak = _peak_rss_mib()
    print(json.dumps({"base_mib": base, "peak_mib": peak, "extra_mib": peak - base}))


def peak_memory(case: Case, impl: str, device: torch.device) -> dict[str, float]:
    """Peak memory of one forward + backward of ``impl`` in a fresh subprocess (MiB)."""
    cmd = [
        python(),
        "-m",
        "bench.loss_memory",
        "--child",
        "--impl",
        impl,
        "--strategy",
        case.strategy,
        "--tokens",
        str(case.tokens),
        "--vocab",
        str(case.vocab),
        "--dim",
        str(case.dim),
        "--dtype",
        case.dtype,
        "--options",
        json.dumps(case.options),
        "--device",
        str(device),
    ]
    for _ in range(2):  # a second try if the step did not raise the process's peak (never seen twice)
        out = subprocess.run(cmd, cwd=ROOT, env=child_env(), capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"memory child failed ({impl}, {case.label}):\n{out.stderr[-2000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if result["extra_mib"] > 0:
            break
    return result


def _time_case(case: Case, device: torch.device, repeats: int):
    s, h, t = _setup(case, device)
    return interleaved(
        {impl: (lambda impl=impl: _step(case, s, h, t, impl, device)) for impl in case.impls},
        repeats=repeats,
        device=device,
    )


def run(
    large: bool = False,
    device_name: str = "auto",
    repeats: int = 2,
    cases: list[Case] | None = None,
    memory_only: bool = False,
) -> Section:
    device = pick_device(device_name)
    rows, mem_rows, figures = [], [], {}
    for case in default_cases(large) if cases is None else cases:
        print(f"[loss] {case.label}", flush=True)
        if case.memory:
            mem = {impl: peak_memory(case, impl, device) for impl in case.impls}
            plain = max(mem["plain"]["extra_mib"], 1e-9)
            for impl in case.impls:
                m = mem[impl]
                mem_rows.append(
                    [
                        case.label,
                        impl,
                        fmt(m["extra_mib"], 0),
                        fmt(m["peak_mib"], 0),
                        fmt(m["extra_mib"] / plain, 3),
                    ]
                )
                figures[f"mem_ratio[{case.label}][{impl}]"] = m["extra_mib"] / plain
        if not case.timed or memory_only:
            continue
        tim = _time_case(case, device, repeats)
        for impl in case.impls:
            r, rc = tim.ratio(impl, "plain"), tim.ratio(impl, "plain", cpu=True)
            rows.append([case.label, impl, fmt(tim.best(impl), 3), fmt(r, 3), fmt(rc, 3)])
            figures[f"time_ratio[{case.label}][{impl}]"] = r
    what = "CUDA memory allocated (torch.cuda.max_memory_allocated)" if device.type == "cuda" else "RSS"
    body = (
        "Peak memory of one forward + backward of the output layer (loss included), each implementation "
        f"in a fresh subprocess. `extra` = peak {what} during the step minus the process's peak just before "
        f"it (parameters, inputs and torch already resident); `peak` = the process's whole peak {what}.\n\n"
        + md_table(["case", "impl", "extra MiB", "peak MiB", "extra / plain"], mem_rows)
        + (
            "\n\nTime of forward + backward, implementations interleaved in one process "
            f"({repeats} rounds after a warm-up); ratios of the fastest call of each.\n\n"
            + md_table(["case", "impl", "best s", "time / plain (wall)", "time / plain (CPU)"], rows)
            if rows
            else ""
        )
    )
    title = "Memory-lean loss (output layer forward + backward)"
    if cases is not None:
        title += ": " + "; ".join(c.label for c in cases)
    return Section(title, body, figures)


def main() -> None:
    p = section_parser(__doc__, "also V=131072 at 8192 tokens (about 16 GB for plain)", 2)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--impl", default="plain", help=argparse.SUPPRESS)
    p.add_argument("--strategy", default="tied", help=argparse.SUPPRESS)
    p.add_argument("--tokens", type=int, default=8192, help=argparse.SUPPRESS)
    p.add_argument("--vocab", type=int, default=32768, help=argparse.SUPPRESS)
    p.add_argument("--dim", type=int, default=512, help=argparse.SUPPRESS)
    p.add_argument("--dtype", default="fp32", help=argparse.SUPPRESS)
    p.add_argument("--options", default="{}", help=argparse.SUPPRESS)
    p.add_argument("--factorized", action="store_true", help="only the factorized (factor_rank = d/4) cases")
    p.add_argument("--memory-only", action="store_true", help="memory, no timing")
    args = p.parse_args()
    if args.child:
        _child(args)
        return
    cases = factorized_cases() if args.factorized else None
    section = run(args.large, args.device, args.repeats, cases=cases, memory_only=args.memory_only)
    print(section.body)


if __name__ == "__main__":
    main()
