"""A token stream as a dataset the transformers Trainer takes (blocks of T+1 tokens)."""

from __future__ import annotations

from torch import Tensor
from torch.utils.data import Dataset

from embtie.errors import ConfigError


class LMBlocks(Dataset):
    """Blocks of T+1 consecutive tokens with stride T: item i = {"input_ids": (T+1,), "labels": (T+1,)}.

    A causal LM shifts the labels by one inside its loss, so each block predicts T tokens and every token
    of the stream after the first is predicted exactly once (with context reset at block starts).
    """

    def __init__(self, ids: Tensor, block: int) -> None:
        if block < 1:
            raise ConfigError(f"block={block} must be >= 1")
        if ids.numel() < block + 1:
            raise ConfigError(f"a stream of {ids.numel()} tokens is shorter than one block of {block + 1}")
        self.blocks = ids.unfold(0, block + 1, block)

    def __len__(self) -> int:
        return self.blocks.shape[0]

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        x = self.blocks[i]
        return {"input_ids": x, "labels": x}

    @property
    def predicted_tokens(self) -> int:
        return self.blocks.shape[0] * (self.blocks.shape[1] - 1)
