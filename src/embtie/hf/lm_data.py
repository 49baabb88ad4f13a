"""LM data (PTB, WikiText-2, or the user's own corpus and tokenizer: embtie.data.lm_corpora.Corpus) as a dataset
the transformers Trainer takes."""

from __future__ import annotations

from torch import Tensor
from torch.utils.data import Dataset

from embtie.data.lm_corpora import Corpus, Vocab, load_corpus_tokens
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


def lm_datasets(
    dataset: str | Corpus, block: int, train_tokens: int | None = None, valid_tokens: int | None = None
) -> tuple[Vocab, LMBlocks, LMBlocks]:
    """(vocabulary of the train split, train blocks, valid blocks) of a catalogue dataset (by name) or a
    ``Corpus``; ``*_tokens`` keep only a stream prefix."""
    corpus = Corpus(dataset) if isinstance(dataset, str) else dataset
    train = load_corpus_tokens(corpus, "train")
    vocab = Vocab.of_corpus(train)
    train_ids = vocab.encode(train if train_tokens is None else train[: train_tokens + 1])
    valid = load_corpus_tokens(corpus, "valid")
    valid_ids = vocab.encode(valid if valid_tokens is None else valid[: valid_tokens + 1])
    return vocab, LMBlocks(train_ids, block), LMBlocks(valid_ids, block)
