"""Word-level language modelling (``task: lm``) on PTB or WikiText-2, contiguous-stream batching.

The training tokens are cut into ``batch_size`` parallel streams (B, L); batch i of an epoch is the
window ``[i*bptt, (i+1)*bptt)`` of every stream, targets shifted by one (Zaremba et al.'s reader).
Stateful models (the LSTM) carry their hidden state from one window to the next within an epoch;
``shuffle`` visits the windows in a per-epoch random order instead (for stateless models). Under
DDP, rank r of W takes streams [r*B/W, (r+1)*B/W): the global batch is split, not repeated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from embtie import models, progress, seeding, sharing
from embtie.config import RunConfig
from embtie.data.files import data_root, verify
from embtie.data.lm import Vocab, load_tokens, split_file
from embtie.errors import ConfigError, DataError
from embtie.evaluation.loss_meter import LossMeter
from embtie.runtime import autocast
from embtie.tasks.base import StepLoss, Task
from embtie.tasks.registry import register


@dataclass
class LMDataConfig:
    """Corpus and batching of a language-modelling run."""

    dataset: Literal["ptb", "wikitext-2"] = "ptb"
    bptt: int = 35
    """tokens per training window (the context length of a GPT)."""
    batch_size: int = 20
    """parallel streams per step, over all processes (the global batch)."""
    eval_batch_size: int = 10
    shuffle: bool = False
    """visit training windows in a random order each epoch (stateless models only)."""
    train_tokens: int | None = None
    """use only the first N training tokens (quick runs, tests); the vocabulary still comes from all."""
    valid_tokens: int | None = None
    """use only the first N tokens of the valid split (quick runs, tests); a --test-file is always whole."""

    def validate(self) -> None:
        for k in ("bptt", "batch_size", "eval_batch_size"):
            if getattr(self, k) < 1:
                raise ConfigError(f"data.{k}={getattr(self, k)} must be >= 1")
        if self.train_tokens is not None and self.train_tokens < 2 * self.batch_size:
            raise ConfigError(f"data.train_tokens={self.train_tokens} must be >= 2 * data.batch_size")


@dataclass
class LMBatch:
    inputs: Tensor
    """(B, T) long token ids."""
    targets: Tensor
    """(B, T) long next-token ids."""


def _tokens(dataset: str, split: str) -> tuple[str, ...]:
    """The tokens of a split under the current data root (cached per root: changing $EMBTIE_DATA reads again)."""
    return _tokens_at(str(data_root()), dataset, split)


@lru_cache(maxsize=8)
def _tokens_at(root: str, dataset: str, split: str) -> tuple[str, ...]:
    return tuple(load_tokens(dataset, split, root=Path(root)))


def _train_vocab(dataset: str) -> Vocab:
    return _train_vocab_at(str(data_root()), dataset)


@lru_cache(maxsize=4)
def _train_vocab_at(root: str, dataset: str) -> Vocab:
    return Vocab.from_tokens(list(_tokens_at(root, dataset, "train")))


def encode(vocab: Vocab, tokens: list[str] | tuple[str, ...]) -> Tensor:
    """(N,) long ids; words outside the vocabulary become <unk>."""
    return vocab.encode(list(tokens))


def batchify(ids: Tensor, streams: int) -> Tensor:
    """(N,) -> (streams, N // streams): the stream cut into contiguous rows (the tail is dropped)."""
    n = ids.numel() // streams
    if n < 2:
        raise DataError(f"{ids.numel()} tokens are too few for {streams} streams")
    return ids[: n * streams].view(streams, n)


@register
class LMTask(Task):
    """Next-word prediction; perplexity is token-weighted over every predicted token of a split."""

    name = "lm"
    data_config = LMDataConfig

    def __init__(self, cfg: RunConfig, vocab: Vocab | None = None) -> None:
        super().__init__(cfg)
        self.data: LMDataConfig = cfg.data
        self.vocab = vocab if vocab is not None else _train_vocab(self.data.dataset)
        self._train: Tensor | None = None
        self._perm: tuple[int, Tensor] | None = None
        self._eval_cache: dict[tuple[str, str | None], Tensor] = {}

    @classmethod
    def check_config(cls, cfg: RunConfig) -> None:
        max_len = getattr(cfg.model, "max_len", None)
        if max_len is not None and cfg.data.bptt > max_len:
            raise ConfigError(f"data.bptt={cfg.data.bptt} > model.max_len={max_len}; raise max_len or lower bptt")
        if cfg.data.shuffle and getattr(models.model_class(cfg.model.name), "stateful", False):
            raise ConfigError(
                f"data.shuffle=true breaks the hidden state that model {cfg.model.name!r} carries; set it false"
            )

    @classmethod
    def check_data(cls, cfg: RunConfig) -> None:
        root = data_root()
        for split in ("train", "valid"):
            f = split_file(cfg.data.dataset, split)
            verify(f.path(root), f.sha256)

    # ------------------------------------------------------------------ model
    def build_model(self) -> nn.Module:
        counts = self.vocab.counts
        if sharing.get(self.cfg.sharing.name).needs_frequency_sorted_vocab and counts != sorted(counts, reverse=True):
            # embtie's vocabularies are sorted by Vocab.from_tokens; a hand-made vocab.json may not be
            raise ConfigError(
                f"strategy {self.cfg.sharing.name!r} needs word ids sorted by decreasing training frequency; "
                "delete the run's vocab.json to rebuild it from the training data"
            )
        return seeding.build_with_streams(
            self.cfg.seed,
            lambda: sharing.build(
                self.cfg.sharing.name,
                vocab_size=len(self.vocab),
                dim=self.cfg.model.embedding_dim,
                **self.cfg.sharing.options,
            ),
            lambda s: models.build(self.cfg.model, s),
        )

    # ------------------------------------------------------------------ training data
    @property
    def train_data(self) -> Tensor:
        """(B, L) the training streams."""
        if self._train is None:
            toks = _tokens(self.data.dataset, "train")
            ids = encode(self.vocab, toks if self.data.train_tokens is None else toks[: self.data.train_tokens])
            self._train = batchify(ids, self.data.batch_size)
        return self._train

    def steps_per_epoch(self, world_size: int = 1) -> int:
        n = (self.train_data.shape[1] - 1) // self.data.bptt
        if n < 1:
            raise ConfigError(f"data.bptt={self.data.bptt} is longer than the training streams; lower it")
        return n

    def _window(self, epoch: int, index: int) -> int:
        if not self.data.shuffle:
            return index
        if self._perm is None or self._perm[0] != epoch:
            g = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + epoch)
            self._perm = (epoch, torch.randperm(self.steps_per_epoch(), generator=g))
        return int(self._perm[1][index])

    def train_batch(self, epoch: int, index: int, rank: int, world_size: int, device: torch.device) -> LMBatch:
        b = self.data.batch_size
        if b % world_size:
            raise ConfigError(f"data.batch_size={b} must be divisible by the {world_size} processes")
        r0, r1 = rank * b // world_size, (rank + 1) * b // world_size
        t = self.data.bptt
        s = self._window(epoch, index) * t
        rows = self.train_data[r0:r1]
        return LMBatch(rows[:, s : s + t].to(device), rows[:, s + 1 : s + 1 + t].to(device))

    def init_carry(self, model: nn.Module, rank: int, world_size: int, device: torch.device) -> Any:
        if not getattr(model, "stateful", False):
            return None
        return model.init_state(self.data.batch_size // world_size, device)

    def loss(self, model: nn.Module, batch: LMBatch, carry: Any) -> tuple[StepLoss, Any]:
        if getattr(model, "stateful", False):
            h, carry = model(batch.inputs, carry)
            carry = tuple(c.detach() for c in carry)
        else:
            h = model(batch.inputs)
        ce = model.sharing.loss(h, batch.targets)
        objective = ce + model.sharing.regularization()
        return StepLoss(objective=objective, ce=ce.detach(), tokens=batch.targets.numel()), carry

    def carry_to_tensors(self, carry: Any) -> dict[str, Tensor]:
        return {} if carry is None else {f"carry.{i}": c.contiguous() for i, c in enumerate(carry)}

    def carry_from_tensors(self, tensors: dict[str, Tensor], device: torch.device) -> Any:
        keys = sorted(k for k in tensors if k.startswith("carry."))
        return tuple(tensors[k].to(device) for k in keys) if keys else None

    # ------------------------------------------------------------------ vocabulary facts
    def output_token_counts(self) -> np.ndarray | None:
        return np.asarray(self.vocab.counts, dtype=np.int64) if self.vocab.counts else None

    def english_words(self) -> dict[str, int]:
        return self.vocab.stoi

    # ------------------------------------------------------------------ evaluation
    def eval_data(self, split: str, path: str | Path | None = None) -> Tensor:
        """(eval_batch_size, L) the streams of a split (or of a user file)."""
        key = (split, None if path is None else str(path))
        if key not in self._eval_cache:
            toks = (
                load_tokens(self.data.dataset, split, path) if path is not None else _tokens(self.data.dataset, split)
            )
            ids = encode(self.vocab, toks)
            if split == "valid" and path is None and self.data.valid_tokens is not None:
                ids = ids[: self.data.valid_tokens]
            # short files get fewer streams, so that they keep most of their tokens
            streams = max(1, min(self.data.eval_batch_size, ids.numel() // (self.data.bptt + 1)))
            self._eval_cache[key] = batchify(ids, streams)
        return self._eval_cache[key]

    @torch.no_grad()
    def evaluate(
        self, model: nn.Module, split: str = "valid", path: str | Path | None = None, max_batches: int | None = None
    ) -> dict[str, Any]:
        data = self.eval_data(split, path)
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        stateful = getattr(model, "stateful", False)
        carry = model.init_state(data.shape[0], device) if stateful else None
        meter = LossMeter()
        t = self.data.bptt
        try:
            starts = range(0, data.shape[1] - 1, t)
            for n, s in enumerate(progress.bar(starts, desc=f"eval {split}", unit="batch")):
                if max_batches is not None and n >= max_batches:
                    break
                x = data[:, s : s + t].to(device)
                y = data[:, s + 1 : s + 1 + t].to(device)
                x = x[:, : y.shape[1]]
                with autocast(device, self.cfg.train.precision):
                    if stateful:
                        h, carry = model(x, carry)
                    else:
                        h = model(x)
                    ce = model.sharing.loss(h, y)
                meter.add(ce, y.numel())
        finally:
            model.train(was_training)
        return {"split": split, "loss": meter.loss, "ppl": meter.ppl, "tokens": meter.tokens}

    # ------------------------------------------------------------------ run directory
    def save(self, run_dir: Path) -> None:
        (Path(run_dir) / "vocab.json").write_text(json.dumps(self.vocab.to_json()), encoding="utf-8")

    @classmethod
    def load(cls, cfg: RunConfig, run_dir: Path) -> LMTask:
        p = Path(run_dir) / "vocab.json"
        vocab = None
        if p.is_file():
            try:
                vocab = Vocab.from_json(json.loads(p.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError) as e:  # not JSON, not UTF-8, or not {"itos": [...]}
                raise DataError(
                    f"{p} is damaged ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); delete it "
                    "to rebuild the vocabulary from the training data, or restore it"
                ) from None
        return cls(cfg, vocab)
