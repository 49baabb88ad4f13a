"""Adaptive input (Baevski & Auli 2018) + adaptive softmax (Grave et al. 2017) as one sharing strategy.

The frequency-sorted vocabulary is cut into a head cluster and tail clusters (``adaptive_clusters``).
Cluster i has a table E_i (V_i, d_i) with d_i = d / div_factor^i and, where d_i < d, a projection
P_i (d, d_i):

    input vector of word w in cluster i:  x_w = P_i e_w                       (d,)
    logit of w within its cluster:         z_w = o_w . (Q_i^T h)  = (O_i Q_i^T)_w . h

with O_i = E_i when ``tie_weights`` (Baevski & Auli's tied adaptive input/softmax) and Q_i = P_i when
also ``tie_projections`` (then z_w = x_w . h: the effective output rows are the input vectors). The
head cluster's softmax covers its words plus one learned vector per tail cluster; log-probabilities
are exact (``adaptive_loss``). ``within`` applies a normalized strategy's formula inside every cluster
to the effective rows W_i = O_i Q_i^T (the head's rows being [E_0; cluster vectors]): l2norm
normalizes them on both sides, cosine / sqnorm divide the logits by their norms, distance subtracts
half their squared norms. The row norms come from the (d_i, d_i) Gram matrix Q_i^T Q_i (via
``factorized.fold_factor``), so no cluster ever forms a (V_i, d) product in the loss.

``logits(h)`` returns the exact log-probabilities (valid logits: softmax of them is the distribution).
The vocabulary must be sorted by decreasing training frequency (``needs_frequency_sorted_vocab``);
embtie's LM vocabularies are.
"""

from __future__ import annotations

import itertools
import typing
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie.errors import ConfigError, DataError
from embtie.schema import Rule, Setting
from embtie.sharing.adaptive_clusters import ClusterLayout
from embtie.sharing.adaptive_loss import adaptive_log_probs, adaptive_nll
from embtie.sharing.base import LogitMoments, SharingStrategy
from embtie.sharing.factorized import fold_factor
from embtie.sharing.head import Head
from embtie.sharing.inputs import check_ids, ranges_checked, traced_range_check
from embtie.sharing.loss import IMPLS, check_targets
from embtie.sharing.registry import get, register

Within = Literal["tied", "l2norm", "sqnorm", "distance", "cosine"]
"""Strategies whose formula can be applied inside every cluster (one matrix, no extra parameters)."""
WITHIN: tuple[str, ...] = typing.get_args(Within)


def _increasing(cutoffs: list[int]) -> bool:
    return all(c > 0 for c in cutoffs) and all(a < b for a, b in itertools.pairwise(cutoffs))


@register
class Adaptive(SharingStrategy):
    """Adaptive input + adaptive softmax with tied cluster tables (options: see the module docstring)."""

    name = "adaptive"
    formula = "clusters of shrinking width; input P_i e_w; log p(w) = log p_head(cluster) + log p_i(w)"
    source = "Baevski & Auli 2018 (adaptive input, tied); Grave et al. 2017 (adaptive softmax)"
    needs_frequency_sorted_vocab: ClassVar[bool] = True
    flat_table: ClassVar[bool] = False
    zero_head_refusal = "keeps its output as cluster tables and projections, for which a zero start is not implemented"
    declared_options: ClassVar[dict[str, Setting]] = {
        "cutoffs": Setting(
            "word ids c_1 < ... < c_k where the frequency-sorted vocabulary is cut into clusters (ids at or past "
            "the vocabulary size are dropped)",
            min_length=1,
            rule=Rule(_increasing, "positive word ids that increase strictly, e.g. [2000, 10000]"),
            null="[2000, 10000] where below the vocabulary size, else one cut at V // 4",
        ),
        "div_factor": Setting("cluster i has width d / div_factor^i (Baevski & Auli use 4)", ge=1),
        "tie_weights": Setting("the output tables are the input tables E_i (Baevski & Auli's tied adaptive input)"),
        "tie_projections": Setting("the output projections are the input projections P_i too (needs tie_weights)"),
        "within": Setting("the formula applied inside every cluster (a normalized strategy's, or tied's)"),
    }

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        cutoffs: list[int] | None = None,
        div_factor: float = 4.0,
        tie_weights: bool = True,
        tie_projections: bool = False,
        within: Within = "tied",
        **options: Any,
    ) -> None:
        for opt, off in (("factor_rank", None), ("token_temperature", False), ("z_loss", 0.0)):
            if options.get(opt, off) not in (off,):
                raise ConfigError(f"option {opt} is not available with strategy 'adaptive'; leave it unset")
        super().__init__(vocab_size, dim, **options)
        del self.weight  # the flat (V, d) table is replaced by the cluster tables
        self.layout = ClusterLayout.build(vocab_size, dim, cutoffs, div_factor)
        self.tie_weights = tie_weights
        self.tie_projections = tie_projections
        if self.tie_projections and not self.tie_weights:
            raise ConfigError("option tie_projections=true needs tie_weights=true (it ties the projections too)")
        self.within = within
        self._within_cls = get(within)
        lay = self.layout
        self.tables = nn.ParameterList(nn.Parameter(torch.empty(lay.size(i), w)) for i, w in enumerate(lay.widths))
        narrow = [w for w in lay.widths if w != dim]
        self._proj_slot = [
            None if w == dim else sum(v != dim for v in lay.widths[:i]) for i, w in enumerate(lay.widths)
        ]
        self.projections = nn.ParameterList(nn.Parameter(torch.empty(dim, w)) for w in narrow)
        self.out_tables = (
            None if self.tie_weights else nn.ParameterList(nn.Parameter(t.detach().clone()) for t in self.tables)
        )
        self.out_projections = (
            None if self.tie_projections else nn.ParameterList(nn.Parameter(torch.empty(dim, w)) for w in narrow)
        )
        self.cluster_weight = nn.Parameter(torch.empty(lay.n_tails, dim))
        """(k, d) the head's vector of each tail cluster."""
        self.cluster_bias = nn.Parameter(torch.zeros(lay.n_tails)) if self.bias is not None else None
        self.reset_parameters()

    # ------------------------------------------------------------------ parameters
    def reset_parameters(self) -> None:
        """Tables ~ init_std * sqrt(d / d_i) (effective rows as long as flat E's); projections orthonormal."""
        tables = list(self.tables) + (list(self.out_tables) if self.out_tables is not None else [])
        with torch.no_grad():
            for t in tables:
                self.init_(t).mul_((self.dim / t.shape[1]) ** 0.5)
        projs = list(self.projections) + (list(self.out_projections) if self.out_projections is not None else [])
        for p in projs:
            nn.init.orthogonal_(p)
        self.init_(self.cluster_weight)
        for b in (self.bias, self.cluster_bias):
            if b is not None:
                nn.init.zeros_(b)

    def vocabulary_tables(self) -> list[nn.Parameter]:
        """The word tables of every cluster (whatever their number of rows) and the cluster vectors."""
        out = list(self.out_tables) if self.out_tables is not None else []
        found = {id(p): p for p in [*super().vocabulary_tables(), *self.tables, *out, self.cluster_weight]}
        return list(found.values())

    def _proj(self, i: int, output: bool) -> Tensor | None:
        """(d, d_i) P_i (input) or Q_i (output) of cluster i, or None where d_i = d."""
        j = self._proj_slot[i]
        if j is None:
            return None
        return (self.out_projections if output and self.out_projections is not None else self.projections)[j]

    def check_frequency_order(self, counts: Tensor) -> None:
        """A one-line ``DataError`` unless the vocabulary is cut where ``counts`` (V,) (each id's training
        frequency) allow: every word of a cluster at least as frequent as every word of the next one (the order
        within a cluster does not matter). For a vocabulary built outside embtie, whose order the strategy
        cannot see; embtie's own LM vocabularies are sorted by frequency."""
        c = torch.as_tensor(counts).reshape(-1)
        if c.numel() != self.vocab_size:
            raise DataError(
                f"counts has {c.numel()} entries for a vocabulary of {self.vocab_size} ids; give one per id"
            )
        b = self.layout.bounds
        for i in range(1, self.layout.n_clusters):
            rarest, commonest = c[b[i - 1] : b[i]].min(), c[b[i] : b[i + 1]].max()
            if commonest > rarest:
                first = b[i] + int(c[b[i] : b[i + 1]].argmax())
                raise DataError(
                    f"strategy 'adaptive' needs ids sorted by decreasing frequency: id {first} (count "
                    f"{int(commonest)}) in cluster {i} is more frequent than a word of cluster {i - 1} (count "
                    f"{int(rarest)}); renumber the vocabulary, e.g. new ids = torch.argsort(counts, descending=True)"
                )

    # ------------------------------------------------------------------ input side
    def _cluster_inputs(self, i: int, local: Tensor) -> Tensor:
        """(n,) ids within cluster i -> (n, d) input vectors (before embed_scale)."""
        rows = F.embedding(local, self.tables[i])
        p = self._proj(i, output=False)
        x = rows if p is None else rows @ p.T
        return self._within_cls._input_rows(self, x)  # the within strategy's input rule (l2norm: unit rows)

    def embed(self, ids: Tensor) -> Tensor:
        """(...,) long token ids -> (..., d) vectors fed into the model (ids checked as ``inputs.check_ids``)."""
        flat = check_ids(ids, self.vocab_size, self._weights_device()).reshape(-1)
        cl = self.layout.cluster_of(flat)
        if torch.compiler.is_compiling():
            out = self._masked_inputs(flat, cl)
        else:
            out = self.tables[0].new_zeros(flat.numel(), self.dim)
            for i in range(self.layout.n_clusters):
                rows = (cl == i).nonzero().squeeze(1)
                if rows.numel():
                    x = self._cluster_inputs(i, flat.index_select(0, rows) - self.layout.bounds[i])
                    out = out.index_copy(0, rows, x.to(out.dtype))
        out = out.view(*ids.shape, self.dim)
        return out * self.embed_scale if self.embed_scale != 1.0 else out

    def _masked_inputs(self, flat: Tensor, cl: Tensor) -> Tensor:
        """(N,) ids, (N,) their clusters -> (N, d) input vectors without data-dependent shapes (what
        ``torch.compile`` traces): every cluster's rule runs on every token (ids clamped into the cluster)
        and ``where`` keeps each token's own; the eager path gathers each cluster's tokens instead."""
        out = self.tables[0].new_zeros(flat.numel(), self.dim)
        for i in range(self.layout.n_clusters):
            local = (flat - self.layout.bounds[i]).clamp(0, self.layout.size(i) - 1)
            x = self._cluster_inputs(i, local).to(out.dtype)
            out = torch.where((cl == i).unsqueeze(1), x, out)
        return out

    def input_vectors(self) -> Tensor:
        """(V, d) the effective input vector of every token."""
        dev = self.tables[0].device
        parts = [
            self._cluster_inputs(i, torch.arange(self.layout.size(i), device=dev)) for i in range(len(self.tables))
        ]
        x = torch.cat(parts)
        return x * self.embed_scale if self.embed_scale != 1.0 else x

    # ------------------------------------------------------------------ output side
    def cluster_head(self, i: int) -> Head:
        """Cluster i's output layer: rows O_i (head: [O_0; cluster vectors]) times factor Q_i^T."""
        tables = self.out_tables if self.out_tables is not None else self.tables
        lo, hi = self.layout.bounds[i], self.layout.bounds[i + 1]
        w, b = tables[i], None if self.bias is None else self.bias[lo:hi]
        if i == 0:
            w = torch.cat([w, self.cluster_weight])
            if b is not None and self.cluster_bias is not None:
                b = torch.cat([b, self.cluster_bias])
        q = self._proj(i, output=True)
        s = self.logit_scale()
        c: Tensor | float | None = self._within_cls.sqnorm_bias
        if c is not None and s is not None:
            c = s * c
        return Head(
            weight=w,
            factor=None if q is None else q.T,
            norm_power=self._within_cls.norm_power,
            bias=b,
            sqnorm_bias=c,
            scale=s,
            softcap=self.softcap,
            cap_shape=self.cap_shape,
        )

    def cluster_logits(self, i: int, x: Tensor) -> Tensor:
        """x: (n, d) -> (n, c_1 + k) head logits or (n, V_i) logits of tail i (before the softmax)."""
        head, y = fold_factor(self.cluster_head(i), x)  # y = x Q_i: (n, d_i); no (V_i, d) product
        return head.logits(y)

    def logits(self, h: Tensor) -> Tensor:
        """(..., d) -> (..., V) exact log-probabilities log p(w | h) (softmax of them is p itself)."""
        self._check_width(h)
        lp = adaptive_log_probs(self.cluster_logits, self.layout, h.reshape(-1, self.dim))
        return lp.view(*h.shape[:-1], self.vocab_size)

    def loss(
        self,
        h: Tensor,
        targets: Tensor,
        ignore_index: int = -100,
        label_smoothing: float = 0.0,
        *,
        impl: str | None = None,
        chunk_size: int | None = None,
    ) -> Tensor:
        """Mean -log p(target | h) over kept tokens. h: (..., d); targets: (...,) long -> scalar.

        The adaptive softmax never forms N x V; ``impl="plain"`` and label smoothing (which needs every
        probability) use the full log-probabilities instead. ``chunk_size`` is accepted and unused.
        """
        self._check_width(h)
        if targets.is_floating_point() or targets.is_complex() or targets.dtype == torch.bool:
            raise TypeError(f"targets must be integer token ids (torch.long), not {targets.dtype}")
        if h.shape[:-1] != targets.shape or targets.numel() == 0:
            raise ValueError(f"hidden states {tuple(h.shape)} and targets {tuple(targets.shape)} do not match")
        if impl is not None and impl not in IMPLS:
            raise ConfigError(f"loss impl={impl!r} is unknown; choose one of: {', '.join(IMPLS)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise ConfigError(f"label_smoothing={label_smoothing!r} must be in [0, 1]")
        x, t = h.reshape(-1, self.dim), targets.reshape(-1)
        if ranges_checked(t):
            check_targets(t, self.vocab_size, ignore_index)
        t = traced_range_check(t, self.vocab_size, ignore_index)
        if impl == "plain" or label_smoothing > 0 or torch.compiler.is_compiling():  # traced: no per-cluster gathers
            lp = self.logits(x)
            return F.cross_entropy(lp, t, ignore_index=ignore_index, label_smoothing=label_smoothing)
        return adaptive_nll(self.cluster_logits, self.layout, x, t, ignore_index)

    def output_vectors(self) -> Tensor:
        """(V, d) the effective rows each word's within-cluster logit is taken against (scales folded in)."""
        parts = [self.cluster_head(i).effective_weight() for i in range(self.layout.n_clusters)]
        parts[0] = parts[0][: self.layout.bounds[1]]  # the head's words, not its cluster vectors
        return torch.cat(parts)

    def _output_core(self) -> tuple[Tensor, Tensor | None, Tensor | None]:
        raise NotImplementedError("strategy 'adaptive' has no single (V, d) output layer; see cluster_head(i)")

    def regularization(self) -> Tensor:
        return self.cluster_weight.new_zeros(())

    def _step0_moments(self) -> LogitMoments:
        """The within strategy's flat moments: effective rows have the norms of a flat E at init_std."""
        flat = self._within_cls(2, self.dim, init_std=self.init_std)
        return flat._step0_moments()

    def extra_repr(self) -> str:
        return (
            f"vocab_size={self.vocab_size}, dim={self.dim}, bounds={list(self.layout.bounds)}, "
            f"widths={list(self.layout.widths)}, tie_weights={self.tie_weights}, "
            f"tie_projections={self.tie_projections}, within={self.within!r}"
        )
