"""End-to-end training throughput: embtie's `gpt` vs Hugging Face transformers' GPT2LMHeadModel.

Both models are built from the identical configuration — layers, width, heads, vocabulary, sequence
length, learned positions, LayerNorm with biases, tanh-GELU MLP of 4 d, no dropout, tied input and
output embedding — and trained on the same random batch with the same optimizer (fused AdamW over
all parameters) and gradient clipping. One step = forward, loss, backward, clip, optimizer step.
transformers computes the loss inside the model (``labels=``, which shifts internally); embtie
computes it with ``sharing.loss`` (the chunked loss by default). Throughput counts B x T tokens
for both. Each (framework, precision) runs in a fresh process of its own, the processes alternating
round after round (embtie, HF, HF, embtie, ...), as a training script would run: measured in one
shared process, HF's step time depended on what the process had run before (0.93 s alone, 0.72 s
after the strategy-overhead section, on the same machine), embtie's did not. ``--in-process`` gives
the old shared-process alternation.

Model FLOPs per token = 6 x (matmul parameters + V d for the output layer) + 6 L T d (causal
attention), compared to the measured matmul peak of this machine for the same dtype.

    python -m bench.hf_gpt2 [--large] [--device cpu|cuda]       (needs the `hf` extra)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from dataclasses import dataclass

import torch

from bench.common import Section, child_env, fmt, interleaved, md_table, pick_device, python, section_parser
from bench.peak import DTYPES, matmul_peak
from embtie import sharing
from embtie.models.gpt import GPT, GPTConfig


@dataclass
class Shape:
    layers: int
    dim: int
    heads: int
    vocab: int
    seq: int
    batch: int

    @property
    def label(self) -> str:
        return f"L={self.layers} d={self.dim} H={self.heads} V={self.vocab} T={self.seq} B={self.batch}"


def shapes(large: bool) -> list[Shape]:
    if large:
        return [Shape(12, 768, 12, 50257, 512, 4)]  # GPT-2 small
    return [Shape(4, 256, 4, 32768, 128, 8)]


def build_embtie(s: Shape, device: torch.device) -> tuple[GPT, sharing.SharingStrategy]:
    torch.manual_seed(0)
    cfg = GPTConfig(
        dim=s.dim,
        n_layers=s.layers,
        n_heads=s.heads,
        mlp_ratio=4.0,
        max_len=s.seq,
        positions="learned",
        norm="layernorm",
        bias=True,
        dropout=0.0,
    )
    strat = sharing.build("tied", vocab_size=s.vocab, dim=s.dim, init_std=0.02)
    return GPT(cfg, strat).to(device), strat


def build_hf(s: Shape, device: torch.device):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=s.vocab,
        n_positions=s.seq,
        n_embd=s.dim,
        n_layer=s.layers,
        n_head=s.heads,
        n_inner=4 * s.dim,
        activation_function="gelu_new",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=1e-5,
        tie_word_embeddings=True,
        use_cache=False,
    )
    model = GPT2LMHeadModel(cfg)
    return model.to(device)


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def flops_per_token(s: Shape) -> float:
    d = s.dim
    matmul = s.layers * (12 * d * d) + s.vocab * d  # qkv 3d^2 + proj d^2 + mlp 8d^2, output layer V d
    return 6.0 * matmul + 6.0 * s.layers * s.seq * d


def _shape(s: Shape, device: torch.device, repeats: int, peaks: dict[str, float]) -> tuple[list[list], dict]:
    """The comparison alternating steps of the two models in this one process (``--in-process``)."""
    rows, figures = [], {}
    for precision in ("fp32", "bf16"):
        print(f"[hf-gpt2] {s.label} {precision}", flush=True)
        bf16 = precision == "bf16"
        emb, step_embtie = _steps("embtie", s, device, bf16)
        hf, step_hf = _steps("hf", s, device, bf16)
        assert n_params(emb) == n_params(hf), (n_params(emb), n_params(hf))
        tim = interleaved({"embtie": step_embtie, "hf": step_hf}, repeats=repeats, warmup=2, device=device)
        best = {who: {"wall": tim.best(who), "cpu": tim.best(who, cpu=True)} for who in ("embtie", "hf")}
        rows += _rows(s, precision, best, peaks)
        figures[f"speedup_vs_hf[{s.label}][{precision}]"] = tim.ratio("hf", "embtie")
    return rows, figures


def _steps(who: str, s: Shape, device: torch.device, bf16: bool):
    """(model, one-training-step function) of ``who`` (embtie or hf) on the shape's fixed batch."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, s.vocab, (s.batch, s.seq), generator=g).to(device)
    if who == "embtie":
        model, strat = build_embtie(s, device)
        targets = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -100)], 1)

        def loss_fn():
            return strat.loss(model(ids), targets)
    else:
        model = build_hf(s, device)

        def loss_fn():
            return model(input_ids=ids, labels=ids).loss

    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return model, step


def _child(args: argparse.Namespace) -> None:
    """In a fresh process: 2 warm-up steps, then ``args.steps`` timed ones; prints the fastest as JSON."""
    torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    s = shapes(args.large)[args.shape]
    _, step = _steps(args.who, s, device, args.precision == "bf16")
    for _ in range(2):
        step()
    wall, cpu = [], []
    for _ in range(args.steps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        w0, c0 = time.perf_counter(), time.process_time()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    print(json.dumps({"wall": min(wall), "cpu": min(cpu)}))


def _isolated(s: Shape, shape_index: int, large: bool, device: torch.device, repeats: int, peaks: dict[str, float]):
    """The comparison with every measurement in a fresh process (alternating, ``repeats`` rounds)."""
    rows, figures = [], {}
    for precision in ("fp32", "bf16"):
        print(f"[hf-gpt2] {s.label} {precision} (fresh processes)", flush=True)
        best: dict[str, dict[str, float]] = {}
        for r in range(repeats):
            for who in ("embtie", "hf") if r % 2 == 0 else ("hf", "embtie"):
                cmd = [python(), "-m", "bench.hf_gpt2", "--child", who, "--precision", precision, "--steps", "3"]
                cmd += ["--shape", str(shape_index), "--device", str(device), "--threads", str(torch.get_num_threads())]
                cmd += ["--large"] if large else []
                out = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), check=False)
                if out.returncode != 0:
                    raise RuntimeError(f"hf_gpt2 child failed: {out.stderr.strip().splitlines()[-1:]}")
                m = json.loads(out.stdout.strip().splitlines()[-1])
                prev = best.get(who)
                best[who] = m if prev is None else {k: min(prev[k], m[k]) for k in m}
        rows += _rows(s, precision, best, peaks)
        figures[f"speedup_vs_hf[{s.label}][{precision}]"] = best["hf"]["wall"] / best["embtie"]["wall"]
    return rows, figures


def _rows(s: Shape, precision: str, best: dict[str, dict[str, float]], peaks: dict[str, float]) -> list[list]:
    tokens, fpt = s.batch * s.seq, flops_per_token(s)
    speedup = best["hf"]["wall"] / best["embtie"]["wall"]
    speedup_cpu = best["hf"]["cpu"] / best["embtie"]["cpu"]
    rows = []
    for who in ("embtie", "hf"):
        tps = tokens / best[who]["wall"]
        rows.append(
            [
                s.label,
                precision,
                who,
                fmt(best[who]["wall"], 3),
                fmt(tps, 0),
                fmt(tps * fpt / 1e9, 1),
                f"{100 * tps * fpt / peaks[precision]:.0f}%",
                fmt(speedup, 2) if who == "embtie" else "",
                fmt(speedup_cpu, 2) if who == "embtie" else "",
            ]
        )
    return rows


def run(large: bool = False, device_name: str = "auto", repeats: int = 3, in_process: bool = False) -> Section:
    device = pick_device(device_name)
    rows, figures = [], {}
    peaks = {p: matmul_peak(DTYPES[p], device) for p in ("fp32", "bf16")}
    for i, s in enumerate(shapes(large)):
        if in_process:
            r, f = _shape(s, device, repeats, peaks)
        else:
            r, f = _isolated(s, i, large, device, repeats, peaks)
        rows += r
        figures.update(f)
    how = (
        f"Same batch, alternating steps in one process, {repeats} rounds after 2 warm-up steps each"
        if in_process
        else f"Same batch; each measurement in a fresh process (2 warm-up + 3 timed steps), {repeats} alternating "
        "rounds per framework and precision"
    )
    body = (
        f"{how}. Speed-up = HF step time / "
        "embtie step time, fastest step of each; tokens/s from the fastest step. Matmul peak measured in the same run: "
        f"fp32 {fmt(peaks['fp32'] / 1e9, 1)} GFLOP/s, bf16 {fmt(peaks['bf16'] / 1e9, 1)} GFLOP/s.\n\n"
        + md_table(
            [
                "shape",
                "precision",
                "model",
                "s/step (best)",
                "tokens/s",
                "model GFLOP/s",
                "of matmul peak",
                "speed-up (wall)",
                "speed-up (CPU)",
            ],
            rows,
        )
    )
    return Section("Training throughput: embtie gpt vs transformers GPT2LMHeadModel", body, figures)


def main() -> None:
    p = section_parser(__doc__, "GPT-2 small (12 x 768, V=50257, T=512) instead", 3)
    p.add_argument("--in-process", action="store_true", help="alternate steps in this one process instead")
    p.add_argument("--child", choices=("embtie", "hf"), help=argparse.SUPPRESS)
    p.add_argument("--precision", default="fp32", help=argparse.SUPPRESS)
    p.add_argument("--steps", type=int, default=3, help=argparse.SUPPRESS)
    p.add_argument("--shape", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        args.who = args.child
        _child(args)
        return
    print(run(args.large, args.device, args.repeats, args.in_process).body)


if __name__ == "__main__":
    main()
