"""The cluster layout of adaptive input / adaptive softmax (Grave et al. 2017; Baevski & Auli 2018).

A frequency-sorted vocabulary [0, V) is cut at ``cutoffs`` c_1 < ... < c_k into k + 1 clusters:
the head [0, c_1) and the tails [c_1, c_2), ..., [c_k, V). Cutoffs at or past V are dropped (a
smaller vocabulary has fewer clusters; with none left the layout is one flat softmax). Cluster i has
width d_i = d / div_factor^i (rounded down, at least 1): the head keeps the model width d, rarer words
get narrower vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

DEFAULT_CUTOFFS = (2000, 10000)
"""Used where they fit under V (WikiText-2, V = 33,278: head 2,000 words, tails 8,000 and 23,278)."""


def default_cutoffs(vocab_size: int) -> list[int]:
    """(2000, 10000) where below V; for a smaller vocabulary one cut at V // 4 (at least 1)."""
    fit = [c for c in DEFAULT_CUTOFFS if c < vocab_size]
    return fit or [max(1, vocab_size // 4)]


@dataclass(frozen=True)
class ClusterLayout:
    """Where each cluster starts and ends, and its width."""

    vocab_size: int
    dim: int
    bounds: tuple[int, ...]
    """k + 2 ids: 0, c_1, ..., c_k, V; cluster i holds ids [bounds[i], bounds[i + 1])."""
    widths: tuple[int, ...]
    """k + 1 widths d_i; widths[0] = dim."""

    @classmethod
    def build(cls, vocab_size: int, dim: int, cutoffs: list[int] | None, div_factor: float) -> ClusterLayout:
        """The layout for ``cutoffs`` (None: ``default_cutoffs``; strictly increasing positive ids, as the
        adaptive strategy's option declares; those at or past V are dropped) and ``div_factor`` (>= 1)."""
        cuts = default_cutoffs(vocab_size) if cutoffs is None else [c for c in cutoffs if c < vocab_size]
        widths = tuple(max(1, int(dim / float(div_factor) ** i)) for i in range(len(cuts) + 1))
        return cls(vocab_size, dim, (0, *cuts, vocab_size), widths)

    @property
    def n_clusters(self) -> int:
        """k + 1: the head and the k tails."""
        return len(self.widths)

    @property
    def n_tails(self) -> int:
        return len(self.widths) - 1

    def size(self, i: int) -> int:
        """V_i, the number of words in cluster i."""
        return self.bounds[i + 1] - self.bounds[i]

    def cluster_of(self, ids: Tensor) -> Tensor:
        """(...,) long word ids -> (...,) long cluster index (0 = head)."""
        inner = torch.tensor(self.bounds[1:-1], dtype=ids.dtype, device=ids.device)
        return torch.bucketize(ids, inner, right=True)
