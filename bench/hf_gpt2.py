"""End-to-end training throughput: embtie's `gpt` vs Hugging Face transformers' GPT2LMHeadModel.

Both models are built from the identical configuration — layers, width, heads, vocabulary, sequence
length, learned positions, LayerNorm with biases, tanh-GELU MLP of 4 d, no dropout, tied input and
output embedding — and trained on the same random batch with the same optimizer (fused AdamW over
all parameters) and gradient clipping. One step = forward, loss, backward, clip, optimizer step.
transformers computes the loss inside the model (``labels=``, which shifts internally); embtie
computes it with ``sharing.loss`` (the chunked loss by default). Throughput counts B x T tokens
for both. Steps alternate between the two models in one process.

Model FLOPs per token = 6 x (matmul parameters + V d for the output layer) + 6 L T d (causal
attention), compared to the measured matmul peak of this machine for the same dtype.

    python -m bench.hf_gpt2 [--large] [--device cpu|cuda]       (needs the `hf` extra)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bench.common import Section, fmt, interleaved, md_table, pick_device, section_parser
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
    rows, figures = [], {}
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, s.vocab, (s.batch, s.seq), generator=g).to(device)
    targets = torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -100)], 1)
    emb, strat = build_embtie(s, device)
    hf = build_hf(s, device)
    assert n_params(emb) == n_params(hf), (n_params(emb), n_params(hf))
    opt_e = torch.optim.AdamW(emb.parameters(), lr=1e-4, fused=True)
    opt_h = torch.optim.AdamW(hf.parameters(), lr=1e-4, fused=True)
    for precision in ("fp32", "bf16"):
        print(f"[hf-gpt2] {s.label} {precision}", flush=True)
        bf16 = precision == "bf16"

        def step_embtie(bf16=bf16):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = strat.loss(emb(ids), targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(emb.parameters(), 1.0)
            opt_e.step()
            opt_e.zero_grad(set_to_none=True)

        def step_hf(bf16=bf16):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = hf(input_ids=ids, labels=ids).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(hf.parameters(), 1.0)
            opt_h.step()
            opt_h.zero_grad(set_to_none=True)

        tim = interleaved({"embtie": step_embtie, "hf": step_hf}, repeats=repeats, warmup=2, device=device)
        tokens = s.batch * s.seq
        speedup = tim.ratio("hf", "embtie")
        fpt = flops_per_token(s)
        for who in ("embtie", "hf"):
            tps = tokens / tim.best(who)
            rows.append(
                [
                    s.label,
                    precision,
                    who,
                    fmt(tim.best(who), 3),
                    fmt(tps, 0),
                    fmt(tps * fpt / 1e9, 1),
                    f"{100 * tps * fpt / peaks[precision]:.0f}%",
                    fmt(speedup, 2) if who == "embtie" else "",
                    fmt(tim.ratio("hf", "embtie", cpu=True), 2) if who == "embtie" else "",
                ]
            )
        figures[f"speedup_vs_hf[{s.label}][{precision}]"] = speedup
    return rows, figures


def run(large: bool = False, device_name: str = "auto", repeats: int = 5) -> Section:
    device = pick_device(device_name)
    rows, figures = [], {}
    peaks = {p: matmul_peak(DTYPES[p], device) for p in ("fp32", "bf16")}
    for s in shapes(large):
        r, f = _shape(s, device, repeats, peaks)
        rows += r
        figures.update(f)
    body = (
        f"Same batch, alternating steps, {repeats} rounds after 2 warm-up steps each. Speed-up = HF step time / "
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
    p = section_parser(__doc__, "GPT-2 small (12 x 768, V=50257, T=512) instead", 5)
    args = p.parse_args()
    print(run(args.large, args.device, args.repeats).body)


if __name__ == "__main__":
    main()
