"""bf16 training throughput at a batch that fills the GPU: embtie's GPT (tied, untied, l2norm) against the
nanoGPT-style reference (bench/nanogpt_ref.py), compiled, in one process.

GPT-2 small (V = 50257, d = 768, 12 layers, 12 heads, learned positions, LayerNorm) at ``batch`` x 1024
tokens (default 32 x 1024), every step under bf16 autocast (float32 weights, fused AdamW), forward + loss
compiled with inductor (``bench.compile_speed.Step``); embtie's loss is its default (``auto``: on CUDA the
plain loss up to 2**31 logits) or the one a strategy names after ``@`` (``tied@chunked``, ``tied@tiled``),
the reference's F.cross_entropy on the full logits. The models
alternate step by step after their first (compiling) step and one warm-up step. Tokens/s is the median
step's; MFU = nanoGPT's FLOPs per token x tokens/s over the bf16 dense peak of the GPU (the datasheet's,
from embtie.planning.hardware, where the GPU is known) and over the bf16 matmul peak measured here.

    python -m bench.train_bf16 [--device cuda] [--batch 32] [--strategies tied,tied@chunked,untied,l2norm] [--tiny]
"""

from __future__ import annotations

import argparse
import time

import torch

from bench.common import Section, fmt, interleaved, md_table, pick_device
from bench.compile_speed import Shape, Step, flops_per_token, matmul_peak, shapes
from embtie.models.gpt import GPTConfig
from embtie.planning.hardware import GPUS

STRATEGIES = ("tied", "untied", "l2norm")
HEADERS = ["model", "ms/step", "tokens/s", "/ reference", "MFU (datasheet)", "MFU (measured)", "1st step s", "loss"]


def gpt2_shape(batch: int, tokens: int = 1024) -> Shape:
    """GPT-2 small at ``batch`` x ``tokens``."""
    cfg = GPTConfig(dim=768, n_layers=12, n_heads=12, max_len=tokens, positions="learned", norm="layernorm")
    return Shape("GPT-2 small", 50257, cfg, batch, tokens)


def bf16_peak(device: torch.device) -> float:
    """FLOP/s of the best of 5 bf16 square matmuls (8192 on CUDA, 512 on the CPU), measured here."""
    return matmul_peak(device, torch.bfloat16, 8192 if device.type == "cuda" else 512)


def datasheet_peak(device: torch.device) -> tuple[float, str] | None:
    """(bf16 dense FLOP/s, name) of the GPU from embtie.planning.hardware, or None when it is not listed."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device).lower()
    for key, hw in GPUS.items():
        if key in name:
            return hw.peak_flops["bf16"], hw.description
    return None


class Bf16Step(Step):
    """``bench.compile_speed.Step`` with every forward + loss under bf16 autocast (compiled inside it)."""

    def __init__(self, strategy: str | None, shape: Shape, device: torch.device, impl: str | None = None) -> None:
        super().__init__(strategy, shape, device, compiled=True, impl=impl)
        self.device_type = device.type
        self.compiled_loss = self.loss
        self.loss = self._autocast_loss

    def _autocast_loss(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        with torch.autocast(self.device_type, dtype=torch.bfloat16):
            return self.compiled_loss(ids, targets)


def run(
    device_name: str = "auto",
    repeats: int = 5,
    batch: int = 32,
    strategies: tuple[str, ...] = STRATEGIES,
    budget_s: float | None = None,
    tiny: bool = False,
) -> Section:
    """The table: the reference and each strategy, compiled bf16 steps; no new model is built once
    ``budget_s`` seconds have passed (the ones left are named)."""
    device = pick_device(device_name)
    shape = shapes()["tiny"] if tiny else gpt2_shape(batch)
    if tiny:
        shape = Shape(shape.label, shape.vocab, shape.model, 2, shape.tokens)
    flops = flops_per_token(shape)
    measured, sheet = bf16_peak(device), datasheet_peak(device)
    steps: dict[str, Bf16Step] = {}
    first: dict[str, float] = {}
    notes, left = [], []
    t0 = time.perf_counter()
    torch._dynamo.reset()
    for spec in (None, *strategies):
        name, _, impl = (spec or "").partition("@")
        label = (f"{name} ({impl} loss)" if impl else name) if spec else "nanoGPT (reference)"
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            left.append(label)
            continue
        print(f"[train_bf16] {shape.label} {shape.batch} x {shape.tokens} {label}", flush=True)
        try:
            step = Bf16Step(name or None, shape, device, impl or None)
            t1 = time.perf_counter()
            step()
            first[label] = time.perf_counter() - t1
            steps[label] = step
        except torch.cuda.OutOfMemoryError:
            notes.append(f"{label}: out of memory at {shape.batch} x {shape.tokens}")
        except Exception as e:  # a compiler error on this torch is a finding, not the end of the table
            notes.append(f"{label} failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
        print("  " + (notes[-1] if label not in steps else f"first step {first[label]:.1f} s"), flush=True)
    tim = interleaved(dict(steps), repeats=repeats, warmup=1, device=device)
    tokens = shape.batch * shape.tokens
    ref = "nanoGPT (reference)"
    rows, figures = [], {}
    for label in steps:
        tps = tokens / tim.median(label)
        ratio = tps / (tokens / tim.median(ref)) if ref in steps else float("nan")
        mfu = "n/a" if sheet is None else f"{100 * flops * tps / sheet[0]:.1f}%"
        ms, measured_mfu = fmt(1e3 * tim.median(label), 1), f"{100 * flops * tps / measured:.1f}%"
        loss = f"{steps[label].last:.3f}"
        rows.append([label, ms, fmt(tps, 0), fmt(ratio, 3), mfu, measured_mfu, fmt(first[label], 1), loss])
        figures[f"tokens_per_s[{label}]"] = tps
        figures[f"tps_ratio[{label}]"] = ratio
    peak_text = "no datasheet peak for this device" if sheet is None else f"{sheet[1]}: {sheet[0] / 1e12:.0f} TFLOP/s"
    body = (
        f"{shape.label} at {shape.batch} x {shape.tokens} tokens, bf16 autocast, forward + loss compiled "
        f"(inductor), fused AdamW; median of {repeats} interleaved steps after a warm-up. MFU: "
        f"{flops / 1e9:.2f} GFLOP per token x tokens/s over the bf16 dense peak ({peak_text}) and over the "
        f"bf16 matmul peak measured here ({measured / 1e12:.0f} TFLOP/s). `/ reference`: tokens/s over the "
        "nanoGPT-style model's.\n\n"
        + md_table(HEADERS, rows)
        + (f"\n\nNot measured (time budget spent): {', '.join(left)}." if left else "")
        + "".join(f"\n\n{n}" for n in notes)
    )
    return Section("bf16 compiled training at a batch that fills the GPU", body, figures)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--batch", type=int, default=32, help="sequences of 1024 tokens per step")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--budget-s", type=float, default=None, help="build no new model after this many seconds")
    p.add_argument("--tiny", action="store_true", help="ptb-gpt-tiny's shape at 2 sequences (the dry run)")
    a = p.parse_args()
    sec = run(a.device, a.repeats, a.batch, tuple(a.strategies.split(",")), a.budget_s, a.tiny)
    print(sec.body)


if __name__ == "__main__":
    main()
