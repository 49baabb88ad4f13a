"""Length-bucketed batches of sentence pairs, sized by token count.

Pairs are sorted by length (with random tie-breaking per epoch), cut into batches whose padded size
``rows x longest side`` stays within ``max_tokens``, and the batch order is shuffled. Padding uses
the pad id, which the loss ignores (``ignore_index=pad``), so padding never contributes to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from embtie.data.subwords import BOS, EOS, PAD
from embtie.errors import ConfigError


@dataclass
class PairBatch:
    """One batch. src: (B, S) ids ending in EOS; tgt_in: (B, T) = BOS + y; tgt_out: (B, T) = y + EOS.

    Positions past each sentence hold PAD. ``index`` (B,) gives each row's position in the dataset.
    """

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    index: Tensor
    num_target_tokens: int
    """the non-PAD positions of ``tgt_out``, counted on the host when the batch is built: a plain int, which
    ``torch.compile`` traces where a count of the device tensor would break the graph (and sync the host)."""

    def to(self, device: torch.device | str) -> PairBatch:
        return PairBatch(
            self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device), self.index, self.num_target_tokens
        )


def pad_rows(rows: Sequence[Sequence[int]], pad: int = PAD) -> Tensor:
    """List of id lists -> (B, max len) long tensor padded on the right."""
    width = max((len(r) for r in rows), default=0)
    out = torch.full((len(rows), width), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            out[i, : len(r)] = torch.as_tensor(r, dtype=torch.long)
    return out


def source_tensor(src: Sequence[Sequence[int]]) -> Tensor:
    """(B, S) source ids, each sentence followed by EOS, padded."""
    return pad_rows([[*s, EOS] for s in src])


def make_batch(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], index: Sequence[int]) -> PairBatch:
    tgt_out = pad_rows([[*t, EOS] for t in tgt])
    return PairBatch(
        src=source_tensor(src),
        tgt_in=pad_rows([[BOS, *t] for t in tgt]),
        tgt_out=tgt_out,
        index=torch.as_tensor(list(index), dtype=torch.long),
        num_target_tokens=int((tgt_out != PAD).sum()),
    )


def token_batches(lengths: Sequence[int], max_tokens: int, order: Sequence[int]) -> list[list[int]]:
    """Cut ``order`` (indices sorted by length) into runs whose padded size stays within max_tokens.

    ``lengths[i]`` is the longer side of pair i (with its EOS). A single pair longer than
    ``max_tokens`` forms a batch of its own.
    """
    batches: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        n = lengths[i]
        if cur and max(longest, n) * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    if cur:
        batches.append(cur)
    return batches


def sentence_batches(order: Sequence[int], max_sentences: int) -> list[list[int]]:
    """Cut ``order`` into consecutive runs of ``max_sentences`` pairs (the last one may be shorter)."""
    if max_sentences < 1:
        raise ConfigError(f"max_sentences={max_sentences} must be >= 1")
    return [list(order[i : i + max_sentences]) for i in range(0, len(order), max_sentences)]


class BucketedPairs:
    """Tokenized sentence pairs that yield length-bucketed PairBatches.

    src, tgt: lists of id lists (without BOS/EOS). ``max_len`` drops training pairs with a side
    longer than that (in tokens); evaluation keeps everything. ``max_sentences`` (when given) makes
    batches of that many pairs (the last of an epoch fewer) instead of ``max_tokens`` padded tokens.
    """

    def __init__(
        self,
        src: list[list[int]],
        tgt: list[list[int]],
        max_tokens: int,
        *,
        max_len: int | None = None,
        max_sentences: int | None = None,
    ) -> None:
        if len(src) != len(tgt):
            raise ValueError(f"{len(src)} sources but {len(tgt)} targets")
        if max_tokens < 1:
            raise ConfigError(f"max_tokens={max_tokens} must be >= 1")
        keep = [i for i in range(len(src)) if max_len is None or max(len(src[i]), len(tgt[i])) <= max_len]
        self.indices = keep
        self.src = src
        self.tgt = tgt
        self.max_tokens = max_tokens
        self.max_sentences = max_sentences
        self.lengths = {i: max(len(src[i]), len(tgt[i])) + 1 for i in keep}

    def __len__(self) -> int:
        return len(self.indices)

    def batches(self, generator: torch.Generator | None = None) -> list[list[int]]:
        """Index lists of one epoch; shuffled (ties and batch order) when a generator is given."""
        if generator is None:
            order = sorted(self.indices, key=lambda i: (self.lengths[i], i))
        else:
            noise = torch.rand(len(self.indices), generator=generator).tolist()
            order = [i for _, _, i in sorted(zip((self.lengths[i] for i in self.indices), noise, self.indices))]
        lengths = [0] * (max(self.indices, default=-1) + 1)
        for i in self.indices:
            lengths[i] = self.lengths[i]
        if self.max_sentences is not None:
            batches = sentence_batches(order, self.max_sentences)
        else:
            batches = token_batches(lengths, self.max_tokens, order)
        if generator is not None:
            perm = torch.randperm(len(batches), generator=generator).tolist()
            batches = [batches[p] for p in perm]
        return batches
