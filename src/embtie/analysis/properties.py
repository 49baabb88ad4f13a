"""Liu, Zhai & Chen's three properties of an output layer (section 2.2), measured numerically.

The setting of the paper: a hidden state that is a sparse mixture of input vectors,
h = sum_j alpha_j x_j (alpha on the simplex, k = argmax alpha), and the logits z read as estimates of
alpha. With random embeddings whose row norms are spread out (the regime the paper argues about):

- identity:   h = x_k  =>  argmax_i z_i = k.            measured: the rate over all tokens k.
- normality:  z_i <= 1 for every i and mixture.         measured: the largest z_i seen.
- unbiased:   E[z_k] = alpha_k.                          measured: the largest |mean(z_k - alpha_k)|
              within bins of tokens of similar norm, relative to mean(alpha_k) (a bias that depends on
              ||e_k|| is what the paper means; averaging over all norms could hide it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from embtie import sharing

# What Liu et al. claim (their section 2.2); None = the paper says nothing.
PAPER_CLAIMS: dict[str, dict[str, bool]] = {
    "tied": {"identity": False, "normality": False, "unbiased": False},
    "l2norm": {"identity": True, "normality": True, "unbiased": True},
    "sqnorm": {"identity": True, "normality": False, "unbiased": True},
    "distance": {"identity": True, "normality": False, "unbiased": False},
    "cosine": {"identity": True, "normality": False, "unbiased": False},
}

IDENTITY_MIN_RATE = 0.999
NORMALITY_TOL = 1e-4
UNBIASED_MAX_REL_BIAS = 0.05


@dataclass
class PropertyResult:
    identity: float
    """fraction of tokens k for which h = x_k gives argmax z = k"""
    normality: float
    """largest logit seen over all mixtures and tokens"""
    unbiased: float
    """largest |mean(z_k - alpha_k)| over norm bins, relative to mean(alpha_k)"""
    holds: dict[str, bool]
    paper: dict[str, bool] | None
    agrees_with_paper: dict[str, bool] | None

    def to_json(self) -> dict:
        return asdict(self)


def spread_embeddings(vocab_size: int, dim: int, spread: float, generator: torch.Generator) -> torch.Tensor:
    """(V, d) random directions with log-normal norms: ||e_i|| = exp(spread * N(0, 1))."""
    direction = torch.randn(vocab_size, dim, generator=generator)
    direction = direction / direction.norm(dim=1, keepdim=True)
    norms = torch.exp(spread * torch.randn(vocab_size, 1, generator=generator))
    return direction * norms


def _logits_in_chunks(s: sharing.SharingStrategy, h: torch.Tensor, chunk: int = 2048) -> list[torch.Tensor]:
    return [s.logits(h[i : i + chunk]) for i in range(0, h.shape[0], chunk)]


@torch.no_grad()
def measure_properties(
    name: str,
    vocab_size: int = 2000,
    dim: int = 64,
    *,
    trials: int = 4000,
    support: int = 4,
    spread: float = 0.5,
    bins: int = 5,
    seed: int = 0,
) -> PropertyResult:
    """Measure identity, normality and unbiasedness of strategy ``name`` (default options).

    The learned embedding E is replaced by random rows with spread-out norms; any other learned or
    fixed tensor of the strategy keeps its own initialisation. Mixtures draw ``support`` distinct
    tokens and alpha ~ Dirichlet(1, ..., 1), the largest weight going to the first token k.
    """
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    s = sharing.build(name, vocab_size=vocab_size, dim=dim).eval()
    s.weight.copy_(spread_embeddings(vocab_size, dim, spread, gen))
    x = s.input_vectors()  # (V, d)

    # identity: h = x_k for every token k
    hits = 0
    for start, z in zip(range(0, vocab_size, 2048), _logits_in_chunks(s, x)):
        hits += int((z.argmax(dim=-1) == torch.arange(start, start + z.shape[0])).sum())
    identity = hits / vocab_size

    # sparse mixtures
    idx = torch.stack([torch.randperm(vocab_size, generator=gen)[:support] for _ in range(trials)])  # (T, K)
    alpha = torch.distributions.Dirichlet(torch.ones(support)).sample((trials,))
    alpha = alpha.sort(dim=1, descending=True).values  # alpha[:, 0] is the largest: token k = idx[:, 0]
    h = (alpha.unsqueeze(-1) * x[idx]).sum(dim=1)  # (T, d)
    zs = _logits_in_chunks(s, h)
    normality = max(float(z.max()) for z in zs)
    k = idx[:, 0]
    z_k = torch.cat(
        [z.gather(1, k[i : i + z.shape[0]].unsqueeze(1)).squeeze(1) for i, z in zip(range(0, trials, 2048), zs)]
    )
    err = z_k - alpha[:, 0]
    norm_k = s.weight.norm(dim=1)[k]
    order = norm_k.argsort()
    worst = max(float(err[chunk].mean().abs()) for chunk in order.chunk(bins))
    unbiased = worst / float(alpha[:, 0].mean())

    holds = {
        "identity": identity >= IDENTITY_MIN_RATE,
        "normality": normality <= 1.0 + NORMALITY_TOL,
        "unbiased": unbiased <= UNBIASED_MAX_REL_BIAS,
    }
    paper = PAPER_CLAIMS.get(name)
    agrees = None if paper is None else {p: holds[p] == paper[p] for p in paper}
    return PropertyResult(identity, normality, unbiased, holds, paper, agrees)
