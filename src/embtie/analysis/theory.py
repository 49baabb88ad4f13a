"""The theory report behind ``embtie theory``: Liu's properties, Su's initial loss, parameter counts."""

from __future__ import annotations

import math

import torch

from embtie import sharing
from embtie.analysis.initial_loss import initial_loss_table
from embtie.analysis.properties import PAPER_CLAIMS, measure_properties
from embtie.data.lm_corpora import Vocab, load_tokens
from embtie.errors import ConfigError

# Why a measured property can disagree with Liu et al. (printed with the table when it happens).
EXPLANATIONS = {
    ("sqnorm", "identity"): (
        "sqnorm: with h = e_k, z_i = ||e_k|| cos(e_i, e_k) / ||e_i|| exceeds z_k = 1 whenever a shorter row e_i "
        "points roughly the same way (||e_i|| < ||e_k|| cos); e.g. e_i = e_k / 2 + a small orthogonal part gives "
        "z_i ~ 2. The paper's condition (no e_i parallel to e_j) is not enough once norms are spread."
    ),
}


def corpus_tokens(vocab_size: int, max_tokens: int, seed: int) -> tuple[str, torch.Tensor]:
    """Real text (PTB train, or WikiText-2 train when the vocabulary is larger than PTB's), as ids of a
    vocabulary cut to the ``vocab_size`` most frequent words (the rest map to <unk>). Returns
    (corpus name, (max_tokens,) ids) taken from a random contiguous window."""
    if vocab_size > 33278:
        raise ConfigError(f"--vocab {vocab_size} is larger than WikiText-2's 33278 words; use --vocab <= 33278")
    name = "ptb" if vocab_size <= 10000 else "wikitext-2"
    toks = load_tokens(name, "train")
    vocab = Vocab.from_tokens(toks)
    ids = vocab.encode(toks)
    if vocab_size < len(vocab):
        unk = vocab.stoi["<unk>"]
        if unk >= vocab_size:
            raise ConfigError(f"--vocab {vocab_size} is too small to keep <unk>; use --vocab >= {unk + 1}")
        ids = torch.where(ids < vocab_size, ids, torch.full_like(ids, unk))
    gen = torch.Generator().manual_seed(seed)
    n = min(max_tokens, ids.numel())
    start = int(torch.randint(0, ids.numel() - n + 1, (1,), generator=gen))
    return name, ids[start : start + n]


def theory_report(
    vocab_size: int = 10000,
    dim: int = 256,
    *,
    names: list[str] | None = None,
    property_vocab: int = 2000,
    property_dim: int = 64,
    trials: int = 4000,
    spread: float = 0.5,
    tokens: int = 20000,
    seed: int = 0,
) -> dict:
    """Everything ``embtie theory --json`` prints (see the issue's key layout)."""
    if vocab_size < 2 or dim < 2:
        raise ConfigError("--vocab and --dim must be at least 2")
    names = names or sharing.names()
    corpus, ids = corpus_tokens(vocab_size, tokens, seed)
    # Liu et al.'s properties are statements about the logits of one V x d table; a strategy without one
    # (adaptive: clusters of shrinking width, log-probabilities) is listed as not applicable
    flat = [n for n in names if sharing.get(n).flat_table]
    props = {
        n: measure_properties(n, property_vocab, property_dim, trials=trials, spread=spread, seed=seed).to_json()
        for n in flat
    }
    params = {}
    for n in names:
        s = sharing.build(n, vocab_size=vocab_size, dim=dim)
        params[n] = s.parameter_counts()
    disagreements = [
        {"strategy": n, "property": p, "explanation": EXPLANATIONS.get((n, p), "")}
        for n, r in props.items()
        if r["agrees_with_paper"]
        for p, ok in r["agrees_with_paper"].items()
        if not ok
    ]
    n_claims = sum(len(c) for n, c in PAPER_CLAIMS.items() if n in names)
    return {
        "vocab_size": vocab_size,
        "dim": dim,
        "log_vocab": math.log(vocab_size),
        "corpus": corpus,
        "initial_loss": initial_loss_table(names, vocab_size, dim, ids, seed=seed),
        "properties": props,
        "property_setting": {
            "vocab_size": property_vocab,
            "dim": property_dim,
            "trials": trials,
            "norm_spread": spread,
            "seed": seed,
        },
        "properties_not_applicable": {
            n: "no single V x d table: its logits are the log-probabilities of clustered tables"
            for n in names
            if n not in flat
        },
        "paper_agreement": {"claims": n_claims, "agree": n_claims - len(disagreements), "disagree": disagreements},
        "parameters": params,
    }
