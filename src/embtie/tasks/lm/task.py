"""``LMTask``: next-word prediction with a ``LanguageModel``; perplexity is token-weighted over every
predicted token of a split.

Stateful models (the LSTM) carry their hidden state from one window to the next within an epoch (the
carry, saved in checkpoints); stateless ones read every window on their own.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from embtie import progress, sharing
from embtie.config import RunConfig
from embtie.data.files import verify
from embtie.data.lm_corpora import SUBWORD_TOKENIZERS, Corpus, Vocab, split_file, subword_corpus
from embtie.errors import ConfigError, DataError
from embtie.evaluation.loss_meter import LossMeter
from embtie.models import model_class
from embtie.models.language_model import LanguageModel
from embtie.runtime import autocast
from embtie.tasks.base import StepLoss, Task, TrainingText
from embtie.tasks.lm.config import LMDataConfig
from embtie.tasks.lm.streams import LMBatch, Streams, text_size, tokens, train_vocab
from embtie.tasks.registry import register


@register
class LMTask(Task[LanguageModel]):
    """Next-word prediction; perplexity is token-weighted over every predicted token of a split."""

    name = "lm"
    data_config = LMDataConfig
    model_kind = LanguageModel
    model_kind_name = "language model"

    def __init__(self, cfg: RunConfig, vocab: Vocab | None = None, subword_model: Path | None = None) -> None:
        """``subword_model``: the SentencePiece model a run trained with (``RUN_DIR/subwords.model``) for a
        ``bpe``/``unigram`` tokenizer; without it the model is trained (or found in the cache)."""
        super().__init__(cfg)
        self.data: LMDataConfig = cfg.data
        self.corpus: Corpus = corpus_of(self.data, subword_model)
        self.vocab = vocab if vocab is not None else train_vocab(self.corpus)
        self.streams = Streams(self.data, self.vocab, cfg.seed, self.corpus)

    @classmethod
    def check_config(cls, cfg: RunConfig) -> None:
        max_len = cfg.model.max_len
        if max_len is not None and cfg.data.bptt > max_len:
            raise ConfigError(f"data.bptt={cfg.data.bptt} > model.max_len={max_len}; raise max_len or lower bptt")
        model = model_class(cfg.model.name)
        if cfg.data.shuffle and issubclass(model, LanguageModel) and model.stateful:
            raise ConfigError(
                f"data.shuffle=true breaks the hidden state that model {cfg.model.name!r} carries; set it false"
            )

    @classmethod
    def check_data(cls, cfg: RunConfig) -> None:
        corpus = cfg.data.corpus()
        if corpus.own:  # the user's corpus: read (and cached) now, so that a bad file fails before anything runs
            corpus = subword_corpus(corpus)
            for split in ("train", "valid"):
                tokens(corpus, split)
            return
        for split in ("train", "valid"):
            f = split_file(cfg.data.dataset, split)
            verify(f.path(), f.sha256)

    # ------------------------------------------------------------------ model
    def output_vocab_size(self) -> int:
        return len(self.vocab)

    def model_arguments(self, shared: sharing.SharingStrategy) -> dict[str, Any]:
        """A model that reads the task's vocabulary (a pretrained ``hf`` checkpoint) gets it, in id order."""
        model = model_class(self.cfg.model.name)
        if issubclass(model, LanguageModel) and model.reads_task_vocabulary:
            return {"vocabulary": tuple(self.vocab.itos), "sharing_options": dict(self.cfg.sharing.options)}
        return {}

    def build_model(self) -> LanguageModel:
        counts = self.vocab.counts
        if sharing.get(self.cfg.sharing.name).needs_frequency_sorted_vocab and counts != sorted(counts, reverse=True):
            # embtie's vocabularies are sorted by Vocab.from_tokens; a hand-made vocab.json may not be
            raise ConfigError(
                f"strategy {self.cfg.sharing.name!r} needs word ids sorted by decreasing training frequency; "
                "delete the run's vocab.json to rebuild it from the training data"
            )
        return super().build_model()

    # ------------------------------------------------------------------ training data
    @property
    def train_data(self) -> Tensor:
        """(B, L) the training streams."""
        return self.streams.train

    def steps_per_epoch(self, world_size: int = 1) -> int:
        return self.streams.steps_per_epoch()

    def training_text(self) -> TrainingText:
        windows = self.streams.steps_per_epoch() * self.data.batch_size
        return TrainingText(tokens=windows * self.data.bptt, sequences=windows)

    def train_batch(self, epoch: int, index: int, rank: int, world_size: int, device: torch.device) -> LMBatch:
        b = self.streams.batch(epoch, index, rank, world_size)
        return LMBatch(b.inputs.to(device), b.targets.to(device))

    def init_carry(self, model: LanguageModel, rank: int, world_size: int, device: torch.device) -> Any:
        if not model.stateful:
            return None
        return model.init_state(self.data.batch_size // world_size, device)

    def loss(self, model: LanguageModel, batch: LMBatch, carry: Any) -> tuple[StepLoss, Any]:
        if model.stateful:
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

    def english_words(self) -> dict[str, int] | None:
        """The vocabulary when its tokens are whitespace words; None for subword pieces (``bpe``,
        ``unigram``, ``sentencepiece:``, ``hf:``), whose pieces the word benchmarks cannot name."""
        return self.vocab.stoi if self.corpus.tokenizer == "word" else None

    # ------------------------------------------------------------------ evaluation
    def eval_data(self, split: str, path: str | Path | None = None) -> Tensor:
        """(eval_batch_size, L) the streams of a split (or of a user file)."""
        return self.streams.evaluation(split, path)

    @torch.no_grad()
    def evaluate(
        self, model: LanguageModel, split: str = "valid", path: str | Path | None = None, max_batches: int | None = None
    ) -> dict[str, Any]:
        data = self.eval_data(split, path)
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        carry = model.init_state(data.shape[0], device) if model.stateful else None
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
                    if model.stateful:
                        h, carry = model(x, carry)
                    else:
                        h = model(x)
                    ce = model.sharing.loss(h, y)
                meter.add(ce, y.numel())
        finally:
            model.train(was_training)
        n_tokens, n_bytes = text_size(self.corpus, split, path)
        bpb = meter.loss / math.log(2) * n_tokens / n_bytes
        return {"split": split, "loss": meter.loss, "ppl": meter.ppl, "tokens": meter.tokens, "bpb": bpb}

    # ------------------------------------------------------------------ run directory
    def save(self, run_dir: Path) -> None:
        """RUN_DIR/vocab.json, and the subword model of a ``bpe``/``unigram`` tokenizer as
        RUN_DIR/subwords.model (the run keeps the tokenizer it was trained with)."""
        (Path(run_dir) / "vocab.json").write_text(json.dumps(self.vocab.to_json()), encoding="utf-8")
        model = self.subword_model_file()
        if model is not None and model != Path(run_dir) / SUBWORD_MODEL:
            shutil.copyfile(model, Path(run_dir) / SUBWORD_MODEL)

    def subword_model_file(self) -> Path | None:
        """The SentencePiece model of a ``bpe``/``unigram`` tokenizer (None for any other)."""
        if self.data.corpus().tokenizer not in SUBWORD_TOKENIZERS:
            return None
        return Path(self.corpus.tokenizer.partition(":")[2])

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
        model = Path(run_dir) / SUBWORD_MODEL
        return cls(cfg, vocab, model if model.is_file() else None)


SUBWORD_MODEL = "subwords.model"
"""the run's copy of the SentencePiece model its ``bpe``/``unigram`` tokenizer trained."""


def corpus_of(data: LMDataConfig, subword_model: Path | None = None) -> Corpus:
    """The corpus of ``data`` with its tokenizer resolved: a ``bpe``/``unigram`` one becomes the run's own
    ``subword_model`` when given, else the model trained on the training split (and cached)."""
    corpus = data.corpus()
    if subword_model is not None and corpus.tokenizer in SUBWORD_TOKENIZERS:
        return replace(corpus, tokenizer=f"sentencepiece:{subword_model}")
    return subword_corpus(corpus)
