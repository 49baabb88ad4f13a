"""(image, caption) pairs as token ids, and their padded batches (teacher forcing).

Every caption of an image is one training instance, as in Show-and-Tell and Show-Attend-Tell: an
epoch visits each (image, caption) pair once, in an order drawn from (seed, epoch). A caption longer
than ``max_len`` words is cut to its first ``max_len`` (its </s> stays).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from embtie.data.subwords import BOS, EOS, PAD
from embtie.data.word_vocab import WordVocab


@dataclass
class CaptionPairs:
    """Instances: ``image[i]`` (row of the split's feature tensor) and ``ids[i]`` (words, no BOS/EOS)."""

    image: list[int]
    ids: list[list[int]]

    @classmethod
    def encode(cls, captions: list[list[str]], vocab: WordVocab, max_len: int) -> CaptionPairs:
        """captions[r]: the tokenized captions of image row r."""
        image, ids = [], []
        for row, caps in enumerate(captions):
            for cap in caps:
                image.append(row)
                ids.append(vocab.encode(cap)[:max_len])
        return cls(image, ids)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class CaptionBatch:
    """Image features of each row, <s> w_1 .. w_n (``tgt_in``) and w_1 .. w_n </s> (``tgt_out``), padded."""

    feats: Tensor
    """(B, C) pooled or (B, L, C) spatial features."""
    tgt_in: Tensor
    """(B, T) long."""
    tgt_out: Tensor
    """(B, T) long, PAD after </s>."""
    num_target_tokens: int
    """the non-PAD positions of ``tgt_out``, counted on the host when the batch is built: a plain int, which
    ``torch.compile`` traces where a count of the device tensor would break the graph (and sync the host)."""

    def to(self, device: torch.device | str) -> CaptionBatch:
        return CaptionBatch(
            self.feats.to(device), self.tgt_in.to(device), self.tgt_out.to(device), self.num_target_tokens
        )


def make_caption_batch(feats: Tensor, pairs: CaptionPairs, idx: list[int]) -> CaptionBatch:
    """The batch of instances ``idx``; features of their images from ``feats`` (N_images, ...), as float32."""
    seqs = [pairs.ids[i] for i in idx]
    t = max(len(s) for s in seqs) + 1
    tgt_in = torch.full((len(idx), t), PAD, dtype=torch.long)
    tgt_out = torch.full((len(idx), t), PAD, dtype=torch.long)
    for r, s in enumerate(seqs):
        tgt_in[r, : len(s) + 1] = torch.tensor([BOS, *s])
        tgt_out[r, : len(s) + 1] = torch.tensor([*s, EOS])
    rows = torch.tensor([pairs.image[i] for i in idx])
    return CaptionBatch(feats[rows].float(), tgt_in, tgt_out, int((tgt_out != PAD).sum()))


def epoch_order(n: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """The instances 0..n-1 shuffled with (seed, epoch) and cut into batches of ``batch_size`` (the last
    may be smaller)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    perm = torch.randperm(n, generator=g).tolist()
    return [perm[i : i + batch_size] for i in range(0, n, batch_size)]
