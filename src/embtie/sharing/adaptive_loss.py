"""Exact log-probabilities and cross-entropy of an adaptive softmax (Grave et al. 2017).

The head softmax is over the c_1 most frequent words and one entry per tail cluster; tail cluster i
has its own softmax over its words. For a word w of tail cluster i,

    log p(w | h) = log p_head(cluster i | h) + log p_i(w | h),

and for a head word log p(w | h) = log p_head(w | h); the V probabilities sum to 1 exactly. The loss
computes the head softmax for every token and tail i's softmax only for the tokens whose target is in
tail i, so the work is N x (c_1 + k) + sum_i N_i x V_i instead of N x V.

``cluster_logits(i, x)`` gives the raw logits of cluster i for hidden states x (n, d): (n, c_1 + k)
for the head (words, then one per tail), (n, V_i) for tail i.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from embtie.sharing.adaptive_clusters import ClusterLayout
from embtie.sharing.head import accumulation_dtype

ClusterLogits = Callable[[int, Tensor], Tensor]


def _log_softmax(z: Tensor) -> Tensor:
    return F.log_softmax(z.to(accumulation_dtype(z.dtype)), dim=-1)


def adaptive_log_probs(cluster_logits: ClusterLogits, layout: ClusterLayout, x: Tensor) -> Tensor:
    """x: (N, d) hidden states -> (N, V) log p(w | h) of every word (rows sum to 1 after exp)."""
    c1 = layout.bounds[1]
    head = _log_softmax(cluster_logits(0, x))  # (N, c1 + k)
    parts = [head[:, :c1]]
    for i in range(1, layout.n_clusters):
        parts.append(_log_softmax(cluster_logits(i, x)) + head[:, c1 + i - 1 : c1 + i])
    return torch.cat(parts, dim=-1)


def adaptive_nll(
    cluster_logits: ClusterLogits, layout: ClusterLayout, x: Tensor, targets: Tensor, ignore_index: int
) -> Tensor:
    """Mean of -log p(target | h) over tokens whose target is not ``ignore_index`` (nan if none).

    x: (N, d); targets: (N,) long. Each tail's softmax runs on the tokens whose target it holds only.
    """
    keep = targets != ignore_index
    kept = keep.sum()
    x, t = x[keep], targets[keep]
    cl = layout.cluster_of(t)
    c1 = layout.bounds[1]
    head = _log_softmax(cluster_logits(0, x))
    idx = torch.where(cl == 0, t, c1 + cl - 1)  # a head word, or the entry of its tail cluster
    total = -head.gather(1, idx.unsqueeze(1)).sum()
    for i in range(1, layout.n_clusters):
        rows = (cl == i).nonzero().squeeze(1)
        if rows.numel() == 0:
            continue
        lp = _log_softmax(cluster_logits(i, x.index_select(0, rows)))
        local = (t.index_select(0, rows) - layout.bounds[i]).unsqueeze(1)
        total = total - lp.gather(1, local).sum()
    return total / kept
