"""Run the performance benchmarks, print their tables and write/update BENCHMARKS.md.

    python -m bench                      # everything at default sizes (minutes on 2 shared CPU cores)
    python -m bench --only loss,hadamard # some sections; the others in BENCHMARKS.md are kept
    python -m bench --large              # add the large sizes (V=131072 at 8192 tokens, GPT-2 small, ...)
    python -m bench --device cuda        # the same on a GPU
    python -m bench --only lce_anchor    # embtie's loss vs torch's linear_cross_entropy (--quick: small)
    python -m bench --only compile       # torch.compile (inductor) vs eager training steps
    python -m bench --only tiled_loss    # the tiled loss vs plain, chunked, Liger, CCE (a grid of N, V)
    python -m bench --only train_bf16    # bf16 compiled GPT-2 small training vs a nanoGPT-style model

Each section of BENCHMARKS.md records its own date, machine, torch version and command, so
sections run at different times stay attributable.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from bench import (
    adaptive,
    beam,
    compile_speed,
    conv_mt,
    hadamard,
    hf_gpt2,
    lce_anchor,
    loss_memory,
    overhead,
    peak,
    tiled_loss,
    train_bf16,
)
from bench.common import ROOT, Section, machine, pick_device

SECTIONS: dict[str, Callable[[argparse.Namespace], Section]] = {
    "peak": lambda a: peak.run(a.device),
    "loss": lambda a: loss_memory.run(False, a.device, a.repeats or 2, memory_only=a.memory_only),
    "loss_large": lambda a: loss_memory.run(
        False, a.device, a.repeats or 1, loss_memory.large_cases(), memory_only=a.memory_only
    ),
    "hadamard": lambda a: hadamard.run(a.large, a.device, a.repeats or 3),
    "overhead": lambda a: overhead.run(a.overhead_batch, a.device, a.repeats or 4, a.precision),
    "hf_gpt2": lambda a: hf_gpt2.run(a.large, a.device, a.repeats or 3),
    "compile": lambda a: compile_speed.run(
        a.device,
        a.repeats or 5,
        tuple(a.compile_shapes.split(",")),
        tuple(a.compile_strategies.split(",")),
        a.compile_budget_s,
    ),
    "beam": lambda a: beam.run(a.large, a.device, a.repeats or 3),
    "conv_mt": lambda a: conv_mt.run(a.repeats or 3, 3, 64),
    "adaptive": lambda a: adaptive.run(a.large, a.device, a.repeats or 5),
    "lce_anchor": lambda a: lce_anchor.run(
        a.device, a.repeats or (1 if a.quick or a.tiny else 2), a.quick, a.large, a.tiny
    ),
    "tiled_loss": lambda a: tiled_loss.run(a.device, a.repeats or 3, a.tiled_budget_s, a.tiny),
    "train_bf16": lambda a: train_bf16.run(
        a.device, a.repeats or 5, a.train_batch, tuple(a.train_strategies.split(",")), a.train_budget_s, a.tiny
    ),
}
NEEDS_HF = ("hf_gpt2", "beam")
LARGE_ONLY = ("loss_large",)
GPU_DEFAULT = ("tiled_loss", "train_bf16")
"""sections the default run (no --only) includes on CUDA only: on the CPU the tiled loss runs in Triton's
interpreter and GPT-2 small at 32 x 1024 tokens takes minutes a step."""

HEADER = """# Benchmarks

Produced by `python -m bench` (see bench/). Every ratio is measured **side by side in one process**:
the candidates run alternately, round after round, and the ratio is that of the fastest call of
each (other jobs on this shared machine can only add time); CPU-time ratios are given next to the
wall-clock ones. Memory is measured in separate fresh processes (peak resident set size). Each
section states when, where and with which command it was produced.

Caveats seen on this machine (2 cores, often shared with other jobs; each section gives the load
average at its start):
- Fresh multi-MiB tensors are page-faulted in on first touch (glibc mmap-s large blocks), which costs
  as much as the arithmetic for memory-bound ops, and timings depend on what the process ran before:
  HF GPT-2's step took 0.93 s in a fresh process but 0.72 s after the strategy-overhead section in the
  same process (embtie's did not move). So the GPT-2 comparison runs every measurement in a fresh
  process of its own (`python -m bench.hf_gpt2 --in-process` for the shared-process alternation, which
  gave 1.12x / 1.13x after the other sections on 2026-11-22).
- The strategy-overhead table uses the ptb-gpt-tiny preset's batch (16 x 64 tokens). The normalized
  strategies' extra cost is a fixed number of (V x d) passes per step, so at a batch of 4 sequences
  (`--overhead-batch 4`) their ratio to `tied` is larger.
"""


def _section_text(name: str, sec: Section, info: dict[str, str], command: str, seconds: float) -> str:
    meta = "; ".join(f"{k}: {v}" for k, v in info.items())
    return (
        f"<!-- bench:{name} -->\n## {sec.title}\n\n"
        f"`{command}` ({seconds:.0f} s). {meta}.\n\n{sec.body}\n<!-- /bench:{name} -->\n"
    )


def update_markdown(path, texts: dict[str, str], header: str | None = HEADER) -> None:
    """Replace (or append) the sections in ``texts`` in the file, keeping the others, in SECTIONS order;
    ``header=None`` keeps the file's own text before its first section (BENCHMARKS-cuda.md's)."""
    old = path.read_text() if path.exists() else ""
    if header is None:
        first = old.find("<!-- bench:")
        header = (old if first < 0 else old[:first]).rstrip("\n") + "\n"
    blocks: dict[str, str] = {}
    for m in re.finditer(r"(?s)<!-- bench:(\w+) -->\n.*?<!-- /bench:\1 -->\n", old):
        blocks[m.group(1)] = m.group(0)
    blocks.update(texts)
    known = [n for k in SECTIONS for n in ((k, "loss_memory") if k == "loss" else (k,))]
    order = [n for n in known if n in blocks] + [n for n in blocks if n not in known]
    path.write_text(header + "\n" + "\n".join(blocks[n] for n in order))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument(
        "--only",
        default=None,
        help=f"comma-separated sections: {', '.join(SECTIONS)} (default: all; loss_large only with --large)",
    )
    p.add_argument("--large", action="store_true", help="add the large sizes (slow; more memory)")
    p.add_argument("--device", default="auto", help="cpu, cuda or auto")
    p.add_argument(
        "--threads", type=int, default=1, help="torch threads (default 1: stable timings on a shared machine)"
    )
    p.add_argument("--repeats", type=int, default=None, help="rounds per comparison (default: per section)")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32", help="of the strategy-overhead steps")
    p.add_argument("--memory-only", action="store_true", help="loss section: the memory table only")
    p.add_argument("--quick", action="store_true", help="lce_anchor section: small sizes, one round")
    p.add_argument(
        "--tiny", action="store_true", help="lce_anchor, tiled_loss, train_bf16: tiny sizes (seconds; for tests)"
    )
    p.add_argument(
        "--overhead-batch", type=int, default=None, help="overhead section: sequences per step (default: preset's 16)"
    )
    p.add_argument("--compile-shapes", default="tiny,gpt2", help="compile section: shapes (tiny, gpt2)")
    p.add_argument("--compile-strategies", default="tied", help="compile section: strategies (comma-separated)")
    p.add_argument(
        "--compile-budget-s", type=float, default=None, help="compile section: start nothing new after this long"
    )
    p.add_argument("--tiled-budget-s", type=float, default=None, help="tiled_loss: start no new case after this")
    p.add_argument("--train-batch", type=int, default=32, help="train_bf16: sequences of 1024 tokens per step")
    p.add_argument(
        "--train-strategies",
        default=",".join(train_bf16.STRATEGIES),
        help="train_bf16: strategies, each NAME or NAME@IMPL (a loss implementation: tied@chunked)",
    )
    p.add_argument("--train-budget-s", type=float, default=None, help="train_bf16: build no model after this")
    p.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="markdown file to update ('' = none)")
    args = p.parse_args(argv)
    if args.only is None:
        cuda = pick_device(args.device).type == "cuda"
        names = [n for n in SECTIONS if (args.large or n not in LARGE_ONLY) and (cuda or n not in GPU_DEFAULT)]
    else:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        p.error(f"unknown section {unknown[0]!r}; choose from {', '.join(SECTIONS)}")
    torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    texts = {}
    for name in names:
        if name in NEEDS_HF and importlib.util.find_spec("transformers") is None:
            print(f"[{name}] skipped: transformers is not installed (pip install -e '.[hf]')")
            continue
        info = machine(device)
        t0 = time.perf_counter()
        sec = SECTIONS[name](args)
        seconds = time.perf_counter() - t0
        print(f"\n## {sec.title}\n\n{sec.body}\n", flush=True)
        key = "loss_memory" if name == "loss" and args.memory_only else name  # keep the full loss block
        texts[key] = _section_text(key, sec, info, command.strip(), seconds)
        if args.out:  # write after every section, so an interrupted run keeps what it measured
            out = Path(args.out)  # BENCHMARKS.md gets the CPU header; another file keeps its own
            update_markdown(out, {key: texts[key]}, HEADER if out.resolve() == ROOT / "BENCHMARKS.md" else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
