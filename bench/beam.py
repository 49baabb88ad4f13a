"""Beam-search decoding speed (beam 5): embtie's `transformer` vs transformers' MarianMTModel.generate().

Both models have identical dimensions and architecture: post-norm encoder-decoder Transformer,
sinusoidal positions, embeddings scaled by sqrt(d), ReLU feed-forward, no dropout, one embedding
matrix shared by encoder input, decoder input and output layer. Weights are random, so to decode
the same amount of work both run the same number of decoder steps, out + 1: embtie produces out
tokens and then the EOS that its length limit ``max_len_extra`` forces (an output bias of -1e4 on
EOS keeps it from ending earlier); HF produces out + 1 tokens with EOS suppressed
(``min_new_tokens = max_new_tokens``). Calls alternate in one process.

    python -m bench.beam [--large] [--device cpu|cuda]       (needs the `hf` extra)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bench.common import Section, fmt, interleaved, md_table, pick_device, section_parser
from embtie import sharing
from embtie.data.subwords import BOS, EOS, PAD
from embtie.evaluation.beam_search import beam_search
from embtie.models.transformer_mt import TransformerMT, TransformerMTConfig


@dataclass
class Shape:
    dim: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    sentences: int
    src_len: int
    out_len: int
    beam: int = 5

    @property
    def label(self) -> str:
        return (
            f"d={self.dim} L={self.layers}+{self.layers} H={self.heads} ffn={self.ffn} V={self.vocab} "
            f"B={self.sentences} S={self.src_len} out={self.out_len}"
        )


def shapes(large: bool) -> list[Shape]:
    # The multi30k-transformer-small preset's dimensions.
    out = [Shape(256, 3, 4, 512, 6000, 16, 20, 20)]
    if large:
        out.append(Shape(512, 6, 8, 2048, 32000, 16, 30, 30))  # Marian opus-mt size
    return out


def build_embtie(s: Shape, device: torch.device) -> TransformerMT:
    torch.manual_seed(0)
    cfg = TransformerMTConfig(
        dim=s.dim,
        enc_layers=s.layers,
        dec_layers=s.layers,
        heads=s.heads,
        ffn_dim=s.ffn,
        dropout=0.0,
        pre_norm=False,
        max_positions=max(s.src_len, s.out_len) + 8,
    )
    strat = sharing.build("tied", vocab_size=s.vocab, dim=s.dim, embed_scale="sqrt_d", bias=True)
    with torch.no_grad():
        strat.bias[EOS] = -1e4  # fixed output length: EOS only where the length limit forces it
    return TransformerMT(cfg, strat).to(device).eval()


def build_hf(s: Shape, device: torch.device):
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    cfg = MarianConfig(
        vocab_size=s.vocab,
        decoder_vocab_size=s.vocab,
        d_model=s.dim,
        encoder_layers=s.layers,
        decoder_layers=s.layers,
        encoder_attention_heads=s.heads,
        decoder_attention_heads=s.heads,
        encoder_ffn_dim=s.ffn,
        decoder_ffn_dim=s.ffn,
        activation_function="relu",
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        max_position_embeddings=max(s.src_len, s.out_len) + 8,
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        pad_token_id=PAD,
        eos_token_id=EOS,
        bos_token_id=BOS,
        decoder_start_token_id=BOS,
        forced_eos_token_id=None,
    )
    return MarianMTModel(cfg).to(device).eval()


def _shape(s: Shape, device: torch.device, repeats: int) -> tuple[list[list], dict]:
    rows, figures = [], {}
    print(f"[beam] {s.label}", flush=True)
    g = torch.Generator().manual_seed(2)
    src = torch.randint(4, s.vocab, (s.sentences, s.src_len), generator=g).to(device)
    emb = build_embtie(s, device)
    hf = build_hf(s, device)
    n_e = sum(p.numel() for p in emb.parameters())
    n_h = sum(p.numel() for p in hf.parameters())
    lengths = {}

    def run_embtie():
        hyps = beam_search(emb, src, beam=s.beam, max_len_ratio=0.0, max_len_extra=s.out_len)
        lengths["embtie"] = sorted({len(h.tokens) for h in hyps})

    @torch.no_grad()
    def run_hf():
        out = hf.generate(
            input_ids=src,
            attention_mask=torch.ones_like(src),
            num_beams=s.beam,
            max_new_tokens=s.out_len + 1,
            min_new_tokens=s.out_len + 1,
            do_sample=False,
            early_stopping=False,
            length_penalty=1.0,
        )
        lengths["hf"] = [out.shape[1] - 1]

    tim = interleaved({"embtie": run_embtie, "hf": run_hf}, repeats=repeats, warmup=1, device=device)
    speedup = tim.ratio("hf", "embtie")
    figures[f"beam_speedup_vs_hf[{s.label}]"] = speedup
    for who in ("embtie", "hf"):
        rows.append(
            [
                s.label,
                who,
                f"{(n_e if who == 'embtie' else n_h) / 1e6:.2f}M",
                ",".join(map(str, lengths[who])),
                fmt(tim.best(who), 3),
                fmt(s.sentences / tim.best(who), 1),
                fmt(speedup, 2) if who == "embtie" else "",
                fmt(tim.ratio("hf", "embtie", cpu=True), 2) if who == "embtie" else "",
            ]
        )
    return rows, figures


def run(large: bool = False, device_name: str = "auto", repeats: int = 3) -> Section:
    device = pick_device(device_name)
    rows, figures = [], {}
    for s in shapes(large):
        r, f = _shape(s, device, repeats)
        rows += r
        figures.update(f)
    body = (
        f"Beam 5, random weights, fixed output length; alternating calls, {repeats} rounds after a warm-up. "
        "Speed-up = HF time / embtie time, fastest call of each (see bench/common.py). "
        "`out tokens` = output lengths produced (embtie: tokens before the forced EOS; "
        "HF: generated tokens after the start token; both ran out + 1 decoder steps).\n\n"
        + md_table(
            [
                "shape",
                "model",
                "params",
                "out tokens",
                "s/batch (best)",
                "sentences/s",
                "speed-up (wall)",
                "speed-up (CPU)",
            ],
            rows,
        )
    )
    return Section("Beam-search decoding: embtie transformer vs transformers Marian generate()", body, figures)


def main() -> None:
    p = section_parser(__doc__, "also a Marian opus-mt sized model (d=512, 6+6, V=32000)", 3)
    args = p.parse_args()
    print(run(args.large, args.device, args.repeats).body)


if __name__ == "__main__":
    main()
