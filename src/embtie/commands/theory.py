"""``embtie theory``: Liu et al.'s properties, Su's initial loss and parameter counts for every strategy."""

from __future__ import annotations

import argparse
import json

from embtie import cheap
from embtie.commands.common import number_arg

HELP = "check the papers' theory numerically: Liu's properties, Su's initial loss, parameter counts"
DESCRIPTION = (
    "Measures, for every strategy with its default options: (1) the step-0 loss of the bigram model "
    "h = RMSNorm(embed(x_t)) on real text (PTB train) next to Su's prediction, a refined prediction and ln V; "
    "(2) Liu et al.'s identity / normality / unbiasedness with random embeddings of spread-out norms, with "
    "the paper's claims; (3) learned and fixed parameter counts."
)
EXAMPLES = (
    "embtie theory",
    "embtie theory --strategies tied,l2norm,sqnorm --vocab 2000 --dim 64 --json",
)


MAX_TABLE = 2**28
"""the largest V x d table theory builds per strategy (1 GiB in float32)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--vocab",
        type=number_arg(int, "--vocab", ge=2, most=10_000_000),
        default=10000,
        help="vocabulary size V (default: PTB's 10000)",
    )
    parser.add_argument(
        "--dim", type=number_arg(int, "--dim", ge=1, most=100_000), default=256, help="model width d (default 256)"
    )
    parser.add_argument("--strategies", default=None, help="comma-separated subset (default: all)")
    parser.add_argument(
        "--tokens",
        type=number_arg(int, "--tokens", ge=2, most=10_000_000),
        default=20000,
        help="real-text tokens for the measured loss",
    )
    parser.add_argument(
        "--trials",
        type=number_arg(int, "--trials", ge=1, most=100_000),
        default=4000,
        help="random mixtures for the property checks",
    )
    parser.add_argument("--seed", type=number_arg(int, "--seed", ge=0), default=0, help="random seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def _fmt_bool(b: bool | None) -> str:
    return "-" if b is None else ("yes" if b else "no")


def run(args: argparse.Namespace) -> int:
    from embtie import sharing
    from embtie.analysis.theory import theory_report
    from embtie.errors import ConfigError

    if args.vocab * args.dim > MAX_TABLE:
        raise ConfigError(
            f"--vocab {args.vocab:,} x --dim {args.dim:,} is a table of {args.vocab * args.dim * 4 / 2**30:.0f} GiB "
            f"per strategy; give a smaller --vocab or --dim (at most {MAX_TABLE:,} entries)"
        )
    names = None
    if args.strategies is not None:
        names = [n.strip() for n in args.strategies.split(",") if n.strip()]
        if not names:
            raise ConfigError(f"--strategies {args.strategies!r} lists no strategy; leave it out for all of them, or "
                              "name some, e.g. --strategies tied,l2norm")  # fmt: skip
        for n in names:
            sharing.get(n)
    tokens, trials = cheap.cap(args.tokens, cheap.THEORY_TOKENS), cheap.cap(args.trials, cheap.THEORY_TRIALS)
    rep = theory_report(args.vocab, args.dim, names=names, tokens=tokens, trials=trials, seed=args.seed)
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0

    print(f"Su's initial loss: bigram h = RMSNorm(embed(x_t)) on {rep['corpus']} train, V={rep['vocab_size']}, ")
    print(
        f"d={rep['dim']}, default init (std d^-1/2 unless the strategy says otherwise); ln V = {rep['log_vocab']:.3f}"
    )
    print(f"{'strategy':<14} {'predicted':>10} {'refined':>10} {'measured':>10} {'- ln V':>8}")
    for n, r in rep["initial_loss"].items():
        print(
            f"{n:<14} {r['predicted']:>10.3f} {r['predicted_refined']:>10.3f} {r['measured']:>10.3f} "
            f"{r['measured'] - rep['log_vocab']:>+8.2f}"
        )
    ps = rep["property_setting"]
    print()
    print(
        f"Liu et al.'s properties: V={ps['vocab_size']}, d={ps['dim']}, row norms exp({ps['norm_spread']} N(0,1)), "
        f"{ps['trials']} mixtures of 4 tokens"
    )
    print(f"{'strategy':<14} {'identity':>9} {'max z':>8} {'rel.bias':>9}   holds (id/norm/unb)  paper (id/norm/unb)")
    for n, r in rep["properties"].items():
        h = r["holds"]
        p = r["paper"] or {}
        holds = "/".join(_fmt_bool(h[k]) for k in ("identity", "normality", "unbiased"))
        paper = "/".join(_fmt_bool(p.get(k)) for k in ("identity", "normality", "unbiased"))
        print(f"{n:<14} {r['identity']:>9.3f} {r['normality']:>8.3f} {r['unbiased']:>9.3f}   {holds:<19}  {paper}")
    for n, why in rep["properties_not_applicable"].items():
        print(f"{n:<14} not applicable: {why}")
    agr = rep["paper_agreement"]
    print(f"\nMeasured verdicts agree with the paper on {agr['agree']} of {agr['claims']} claims.")
    for d in agr["disagree"]:
        print(f"  disagrees: {d['strategy']} {d['property']}. {d['explanation']}")
    print()
    print(f"Parameters of the embedding + output layer, V={rep['vocab_size']}, d={rep['dim']}")
    print(f"{'strategy':<14} {'learned':>12} {'fixed':>12}")
    for n, r in rep["parameters"].items():
        print(f"{n:<14} {r['learned']:>12,} {r['fixed']:>12,}")
    return 0
