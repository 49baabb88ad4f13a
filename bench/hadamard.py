"""`hadamard` with target_dim = n >= V: logits by the fast Walsh-Hadamard transform vs the dense matmul.

Both paths compute the same logits (tests/sharing/test_chunked_loss.py checks equality); this times
(a) the logits alone and (b) the loss forward + backward w.r.t. the hidden states, fast vs dense,
interleaved in one process.

    python -m bench.hadamard [--large] [--device cpu|cuda]
"""

from __future__ import annotations

import dataclasses

import torch

from bench.common import Section, fmt, interleaved, md_table, pick_device, section_parser
from embtie import sharing
from embtie.sharing.loss import cross_entropy


def _cases(large: bool) -> list[tuple[int, int, int]]:
    """(tokens, V, n = target_dim)."""
    cases = [(512, 8000, 8192)]
    if large:
        cases.append((1024, 32768, 32768))
    return cases


def _case(tokens: int, vocab: int, n: int, device: torch.device, repeats: int) -> tuple[list[list], dict]:
    torch.manual_seed(0)
    s = sharing.build("hadamard", vocab_size=vocab, dim=n, target_dim=n, logit_scale="learned").to(device)
    assert s.uses_fast_transform()
    fast = s.head()
    dense = dataclasses.replace(fast, structured=None)
    x = torch.randn(tokens, n, device=device, requires_grad=True)
    t = torch.randint(0, vocab, (tokens,), device=device)
    with torch.no_grad():
        err = float((fast.logits(x) - dense.logits(x)).abs().max())

    def logits(head):
        with torch.no_grad():
            head.logits(x)

    def loss(head):
        x.grad = None
        cross_entropy(head, x, t).backward()

    rows, figures = [], {}
    for what, fn in (("logits", logits), ("loss fwd+bwd", loss)):
        tim = interleaved(
            {"dense": lambda fn=fn: fn(dense), "fwht": lambda fn=fn: fn(fast)}, repeats=repeats, device=device
        )
        r = tim.ratio("dense", "fwht")
        rows.append(
            [
                f"N={tokens} V={vocab} n={n}",
                what,
                fmt(tim.best("dense"), 4),
                fmt(tim.best("fwht"), 4),
                fmt(r, 1),
                fmt(tim.ratio("dense", "fwht", cpu=True), 1),
                f"{err:.1e}",
            ]
        )
        figures[f"dense_over_fwht[N={tokens},V={vocab},n={n}][{what}]"] = r
    return rows, figures


def run(large: bool = False, device_name: str = "auto", repeats: int = 3) -> Section:
    device = pick_device(device_name)
    rows, figures = [], {}
    for tokens, vocab, n in _cases(large):
        print(f"[hadamard] N={tokens} V={vocab} n={n}", flush=True)
        r, f = _case(tokens, vocab, n, device, repeats)
        rows += r
        figures.update(f)
    body = (
        "Dense matmul against the (V, n) Hadamard rows vs the fast transform (Kronecker factors of at most "
        "256, `embtie.sharing.hadamard_transform`), interleaved, "
        f"{repeats} rounds. Speed-up = dense time / fast time, fastest call of each.\n\n"
        + md_table(
            [
                "case",
                "what",
                "dense s (best)",
                "fwht s (best)",
                "speed-up (wall)",
                "speed-up (CPU)",
                "max abs logit diff",
            ],
            rows,
        )
    )
    return Section("Hadamard fast transform", body, figures)


def main() -> None:
    p = section_parser(__doc__, "also V = n = 32768", 3)
    args = p.parse_args()
    print(run(args.large, args.device, args.repeats).body)


if __name__ == "__main__":
    main()
