"""Training-step time of embtie's GPT compiled with inductor against the same model eager.

Two shapes: the ptb-gpt-tiny preset (V = 10000, d = 128, 2 layers, 16 x 64 tokens) and GPT-2 small
(V = 50257, d = 768, 12 layers, 12 heads, learned positions, LayerNorm, 8 x 256 tokens). One step =
forward, ``sharing.loss + sharing.regularization``, backward, and the preset's optimizer (fused AdamW,
eager in both): the compiled candidate is ``torch.compile`` of the forward + loss, as a user compiles
a model. Eager and compiled start from the same weights and alternate, round after round, after a
warm-up step each; the first compiled call (tracing + inductor's code generation) is reported apart.

    python -m bench.compile_speed [--shapes tiny,gpt2] [--strategies tied,l2norm] [--repeats 3] [--budget-s S]

Each shape also runs a nanoGPT-style model of the same shape (bench/nanogpt_ref.py), eager and compiled,
and every row gives tokens/s and the MFU against the matmul peak measured in the same process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import Tensor, nn

from bench.common import Section, fmt, interleaved, md_table, pick_device, section_parser, sync
from bench.nanogpt_ref import NanoGPT
from embtie import models, sharing
from embtie.config import load_config
from embtie.models.gpt import GPTConfig
from embtie.training.optim import build_optimizer


@dataclass(frozen=True)
class Shape:
    """A model shape and the batch it trains on."""

    label: str
    vocab: int
    model: GPTConfig
    batch: int
    tokens: int


def shapes() -> dict[str, Shape]:
    """``tiny``: the ptb-gpt-tiny preset (PTB's 10000 words); ``gpt2``: GPT-2 small at 8 x 256 tokens."""
    tiny_cfg = load_config("ptb-gpt-tiny")
    tiny = tiny_cfg.model
    assert isinstance(tiny, GPTConfig)
    gpt2 = GPTConfig(dim=768, n_layers=12, n_heads=12, max_len=256, positions="learned", norm="layernorm")
    return {
        "tiny": Shape("ptb-gpt-tiny", 10000, tiny, tiny_cfg.data.batch_size, tiny_cfg.data.bptt),
        "gpt2": Shape("GPT-2 small", 50257, gpt2, 8, 256),
    }


class Step:
    """One model + optimizer on a fixed random batch; ``compiled``: the forward + loss under torch.compile.

    ``strategy``: embtie's GPT with that strategy (its loss + regularization, the preset's optimizer);
    None: the nanoGPT-style reference (``bench.nanogpt_ref``, tied, plain loss) with the same optimizer.
    ``impl``: embtie's loss implementation (``embtie.sharing.loss.IMPLS``; None: its default, ``auto``)."""

    def __init__(
        self, strategy: str | None, shape: Shape, device: torch.device, compiled: bool, impl: str | None = None
    ) -> None:
        train = load_config("ptb-gpt-tiny").train
        torch.manual_seed(0)
        if strategy is None:
            self.model: nn.Module = NanoGPT(shape.model, shape.vocab).to(device)
        else:
            self.sharing = sharing.build(strategy, vocab_size=shape.vocab, dim=shape.model.dim)
            self.model = models.build(replace(shape.model), self.sharing).to(device)
        self.embtie = strategy is not None
        self.impl = impl
        self.opt = build_optimizer(self.model, train)
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, shape.vocab, (shape.batch, shape.tokens), generator=g).to(device)
        self.targets = torch.randint(0, shape.vocab, (shape.batch, shape.tokens), generator=g).to(device)
        self.loss: Callable[[Tensor, Tensor], Tensor] = self._loss
        if compiled:
            self.loss = torch.compile(self._loss, fullgraph=True)
        self.last = float("nan")

    def _loss(self, ids: Tensor, targets: Tensor) -> Tensor:
        if not self.embtie:
            return self.model(ids, targets)
        return self.sharing.loss(self.model(ids), targets, impl=self.impl) + self.sharing.regularization()

    def __call__(self) -> None:
        loss = self.loss(self.ids, self.targets)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.last = float(loss.detach())


def _first_call(step: Step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def flops_per_token(shape: Shape) -> float:
    """nanoGPT's estimate (PaLM appendix B): 6 x the matmul weights (blocks and the V x d head) plus the
    attention's 12 L d T, per token of a training step (forward + backward)."""
    m = shape.model
    weights = m.n_layers * (4 + 2 * m.mlp_ratio) * m.dim * m.dim + shape.vocab * m.dim
    return 6 * weights + 12 * m.n_layers * m.dim * shape.tokens


def matmul_peak(device: torch.device, dtype: torch.dtype = torch.float32, n: int | None = None) -> float:
    """FLOP/s of the best of 5 square matmuls of ``dtype`` on ``device`` (n: 4096 on CUDA, 1024 on the
    CPU), measured here: the peak the MFU column is a fraction of."""
    n = n or (4096 if device.type == "cuda" else 1024)
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(5):
        sync(device)
        t0 = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def measure(strategy: str | None, shape: Shape, device: torch.device, repeats: int) -> dict[str, float]:
    """{eager_ms, compiled_ms (medians), ratio (eager / compiled median, > 1: compiled faster), ratio_best,
    first_eager_s, first_compiled_s, loss_gap (|eager - compiled| loss after the same steps),
    eager_tps, compiled_tps (tokens/s)}; ``strategy`` None: the nanoGPT reference."""
    torch._dynamo.reset()
    eager, compiled = Step(strategy, shape, device, False), Step(strategy, shape, device, True)
    first = {"eager": _first_call(eager), "compiled": _first_call(compiled)}
    tim = interleaved({"eager": eager, "compiled": compiled}, repeats=repeats, warmup=1, device=device)
    tokens = shape.batch * shape.tokens
    return {
        "eager_ms": 1e3 * tim.median("eager"),
        "compiled_ms": 1e3 * tim.median("compiled"),
        "ratio": tim.median("eager") / tim.median("compiled"),
        "ratio_best": tim.ratio("eager", "compiled"),
        "first_eager_s": first["eager"],
        "first_compiled_s": first["compiled"],
        "loss_gap": abs(eager.last - compiled.last),
        "eager_tps": tokens / tim.median("eager"),
        "compiled_tps": tokens / tim.median("compiled"),
    }


HEADERS = [
    "shape",
    "batch",
    "model",
    "eager ms/step",
    "compiled ms/step",
    "speed-up",
    "(best)",
    "compiled tokens/s",
    "MFU compiled",
    "1st compiled step s",
    "loss gap",
]


def _row(shape: Shape, label: str, m: dict[str, float], flops: float, peak: float) -> list[object]:
    return [
        shape.label,
        f"{shape.batch} x {shape.tokens}",
        label,
        fmt(m["eager_ms"], 1),
        fmt(m["compiled_ms"], 1),
        fmt(m["ratio"]),
        fmt(m["ratio_best"]),
        fmt(m["compiled_tps"], 0),
        f"{100 * flops * m['compiled_tps'] / peak:.0f}%",
        fmt(m["first_compiled_s"], 1),
        f"{m['loss_gap']:.1e}",
    ]


def run(
    device_name: str = "auto",
    repeats: int = 3,
    shape_keys: tuple[str, ...] = ("tiny", "gpt2"),
    strategies: tuple[str, ...] = ("tied",),
    budget_s: float | None = None,
    reference: bool = True,
) -> Section:
    """The compiled-vs-eager table over ``shape_keys`` x (the nanoGPT reference, ``strategies``); no new
    strategy starts once ``budget_s`` seconds have passed (the ones left are listed)."""
    device = pick_device(device_name)
    known, peak, t0 = shapes(), matmul_peak(device), time.perf_counter()
    rows, figures, left, failed = [], {}, [], []
    for key in shape_keys:
        shape = known[key]
        flops = flops_per_token(shape)
        for name in ((None,) if reference else ()) + tuple(strategies):
            if budget_s is not None and time.perf_counter() - t0 > budget_s:
                left.append(f"{shape.label} {name or 'nanoGPT'}")
                continue
            print(f"[compile] {shape.label} {name or 'nanoGPT reference'}", flush=True)
            try:
                m = measure(name, shape, device, repeats)
            except Exception as e:  # a compiler error on this torch is a finding, not the end of the table
                failed.append(f"{shape.label} {name or 'nanoGPT'} ({type(e).__name__}: {str(e).splitlines()[0]})")
                print(f"[compile] failed: {failed[-1]}", flush=True)
                continue
            figures[f"compiled_speedup[{key},{name or 'nanogpt'}]"] = m["ratio"]
            rows.append(_row(shape, name or "nanoGPT (reference)", m, flops, peak))
    body = (
        f"Median step time over {repeats} interleaved rounds after one warm-up step each; speed-up = eager "
        "median / compiled median (> 1: compiled faster; in parentheses the ratio of the fastest steps). "
        "The first compiled step includes tracing and code generation. Loss gap: |eager - compiled| training "
        "loss after the same steps from the same weights. MFU: nanoGPT's FLOPs per token (6 x matmul weights "
        f"+ 12 L d T) x tokens/s over the float32 matmul peak measured in the same process ({peak / 1e9:.0f} "
        "GFLOP/s). nanoGPT (reference): bench/nanogpt_ref.py at the same shape, tied, plain loss."
        + (f" Not measured (time budget spent): {', '.join(left)}." if left else "")
        + (f" Failed (torch {torch.__version__}): {'; '.join(failed)}." if failed else "")
        + "\n\n"
        + md_table(HEADERS, rows)
    )
    return Section("Compiled (inductor) vs eager training step", body, figures)


def main() -> None:
    p = section_parser(__doc__, "(no effect; see --shapes)", 3)
    p.add_argument("--shapes", default="tiny,gpt2", help="comma-separated: tiny, gpt2")
    p.add_argument("--strategies", default="tied", help="comma-separated strategy names")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--budget-s", type=float, default=None, help="start no new measurement after this many seconds")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    sec = run(a.device, a.repeats, tuple(a.shapes.split(",")), tuple(a.strategies.split(",")), a.budget_s)
    print(f"\n## {sec.title}\n\n{sec.body}\n")
    if sec.figures:
        print("median speed-up:", fmt(statistics.median(sec.figures.values())))


if __name__ == "__main__":
    main()
