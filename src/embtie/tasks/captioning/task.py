"""``CaptioningTask``: captioning with cached image features and a ``Captioner``.

- Models (``embtie.models.captioner``): ``show-tell`` reads the pooled features, ``show-attend-tell``
  the spatial grid; the word embedding and output layer are the run's sharing object.
- Loss: ``sharing.loss(h, y)`` + the model's penalty (Show-Attend-Tell's doubly stochastic term) +
  ``model.regularization()``; teacher forcing.
- Quality: ``evaluate_captions`` decodes each image once (beam ``data.beam``) and scores it
  (``embtie.tasks.captioning.evaluation``); ``score('bleu')`` is BLEU-4 of greedy captions of the
  validation images (the plateau schedule / early stopping). Test captions are the dataset's test
  split (``embtie data get flickr8k --split test``; MSCOCO's come with ``embtie data get mscoco``), or a
  captions file from the user.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import Tensor

from embtie import models
from embtie.config import RunConfig
from embtie.data.caption_batches import CaptionBatch, CaptionPairs, epoch_order, make_caption_batch
from embtie.data.image_encoders import build_encoder
from embtie.data.image_features import encode_files
from embtie.data.subwords import PAD
from embtie.data.word_vocab import WordVocab
from embtie.evaluation.caption_scores import coco_scores
from embtie.models.captioner import Captioner, FeatureKind
from embtie.tasks.base import StepLoss, Task, TrainingText
from embtie.tasks.capabilities import Captions
from embtie.tasks.captioning import evaluation, inputs
from embtie.tasks.captioning.config import CaptionDataConfig
from embtie.tasks.registry import register

VOCAB_FILE = "vocab.words.txt"


def feature_kind(cfg: RunConfig) -> FeatureKind:
    """The image features the configured captioner reads."""
    model = cast(type[Captioner], models.model_class(cfg.model.name))  # CaptioningTask.check_model made sure
    return model.feature_kind


@register
class CaptioningTask(Task[Captioner], Captions[Captioner]):
    """Captioning with cached image features; captions and metrics by ``evaluate_captions``."""

    name = "captioning"
    data_config = CaptionDataConfig
    metrics = ("loss", "bleu")
    model_kind = Captioner
    model_kind_name = "captioning model"

    def __init__(self, cfg: RunConfig, vocab: WordVocab | None = None) -> None:
        super().__init__(cfg)
        self.data: CaptionDataConfig = cfg.data
        self.corpus = inputs.CaptionCorpus(self.data, feature_kind(cfg), cfg.model.feature_dim)
        self._pairs: dict[str, CaptionPairs] = {}
        self._order: tuple[int, list[list[int]]] | None = None
        self.vocab = vocab if vocab is not None else self.corpus.learn_vocab()

    @classmethod
    def check_data(cls, cfg: RunConfig) -> None:
        inputs.check_data(cfg.data)

    # ------------------------------------------------------------------ data
    def references(self, split: str, path: str | Path | None = None) -> tuple[list[str], list[list[str]]]:
        """The images of ``split`` and their tokenized captions (from ``path`` when given)."""
        return self.corpus.references(split, path)

    def features(self, names: list[str]) -> Tensor:
        """The cached features (of the model's kind) of images ``names``: (N, C) or (N, L, C)."""
        return self.corpus.features(names)

    def pairs(self, split: str, path: str | Path | None = None) -> tuple[Tensor, CaptionPairs]:
        """The features of the images of ``split`` and their (image, caption) pairs, encoded once."""
        names, caps = self.references(split, path)
        key = f"{split}|{path}"
        if key not in self._pairs:
            self._pairs[key] = CaptionPairs.encode(caps, self.vocab, self.data.max_len)
        return self.features(names), self._pairs[key]

    # ------------------------------------------------------------------ model
    def output_vocab_size(self) -> int:
        return len(self.vocab)

    # ------------------------------------------------------------------ training
    def steps_per_epoch(self, world_size: int = 1) -> int:
        return math.ceil(len(self.pairs("train")[1]) / self.data.batch_size)

    def training_text(self) -> TrainingText:
        pairs = CaptionPairs.encode(self.references("train")[1], self.vocab, self.data.max_len)  # no features
        return TrainingText(tokens=sum(len(ids) + 1 for ids in pairs.ids), sequences=len(pairs))  # + </s>

    def train_batch(self, epoch: int, index: int, rank: int, world_size: int, device: torch.device) -> CaptionBatch:
        feats, pairs = self.pairs("train")
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, epoch_order(len(pairs), self.data.batch_size, self.cfg.seed, epoch))
        idx = self._order[1][index]
        return make_caption_batch(feats, pairs, idx[rank::world_size] or idx[-1:]).to(device)

    def loss(self, model: Captioner, batch: CaptionBatch, carry: Any) -> tuple[StepLoss, Any]:
        h, penalty = model(batch.feats, batch.tgt_in)
        ce = model.sharing.loss(h, batch.tgt_out, ignore_index=PAD)
        objective = ce + penalty + model.regularization()
        return StepLoss(objective=objective, ce=ce.detach(), tokens=batch.num_target_tokens), None

    # ------------------------------------------------------------------ evaluation
    def evaluate(
        self, model: Captioner, split: str = "valid", path: str | Path | None = None, max_batches: int | None = None
    ) -> dict[str, Any]:
        """Teacher-forced cross-entropy per reference word (and </s>) over every (image, caption) pair of
        ``split``, and its perplexity; ``path``: a captions file for the split (default: the dataset's)."""
        feats, pairs = self.pairs(split, path)
        meter = evaluation.teacher_forced_loss(
            model, feats, pairs, self.data.eval_batch, self.cfg.train.precision, max_batches
        )
        return {"split": split, "loss": meter.loss, "ppl": meter.ppl, "tokens": meter.tokens}

    def caption(
        self, model: Captioner, feats: Tensor, *, beam: int | None = None, lenpen: float | None = None
    ) -> list[str]:
        """Captions (space-joined words) of images with features ``feats`` (N, C) or (N, L, C)."""
        return evaluation.caption(model, feats, self.vocab, self.data, self.cfg.train.precision, beam=beam,
                                  lenpen=lenpen)  # fmt: skip

    def caption_files(self, model: Captioner, paths: list[Path], *, beam: int | None = None) -> list[str]:
        """Captions of image files, encoded now by the run's encoder (nothing is cached)."""
        grid = encode_files(build_encoder(self.data.encoder), paths)
        feats = grid.mean(1) if feature_kind(self.cfg) == "pooled" else grid
        return self.caption(model, feats, beam=beam)

    def evaluate_captions(
        self,
        model: Captioner,
        split: str = "valid",
        captions_file: str | Path | None = None,
        *,
        beam: int | None = None,
        lenpen: float | None = None,
        metrics: tuple[str, ...] = ("bleu", "meteor", "rouge_l", "cider"),
    ) -> dict[str, Any]:
        """Caption every image of ``split`` and score against its references (``captions_file`` for a
        split whose captions are not in the run's file, e.g. test): COCO metrics x100, vocabulary usage
        (distinct words, <unk> left out), rare-word share, <unk> share, perplexity. ``hyps``: the captions."""
        names, refs = self.references(split, captions_file)
        beam = self.data.beam if beam is None else beam
        hyps = self.caption(model, self.features(names), beam=beam, lenpen=lenpen)
        res = {**evaluation.result_header(split, captions_file, len(names), beam),
               **evaluation.caption_scores(hyps, refs, self.vocab, self.data.rare_max, metrics)}  # fmt: skip
        ppl = self.evaluate(model, split, captions_file)
        res.update(loss=ppl["loss"], ppl=ppl["ppl"], tokens=ppl["tokens"], names=names, hyps=hyps)
        return res

    def score(self, model: Captioner, metric: str, result: dict[str, Any]) -> float:
        """``bleu``: BLEU-4 (x100) of greedy captions of the validation images."""
        if metric != "bleu":
            return super().score(model, metric, result)
        names, refs = self.references("valid")
        hyps = self.caption(model, self.features(names), beam=1)
        return coco_scores(hyps, refs, ("bleu",))["bleu4"]

    # ------------------------------------------------------------------ vocabulary facts
    def output_token_counts(self) -> np.ndarray | None:
        return np.asarray(self.vocab.counts, dtype=np.int64) if self.vocab.counts else None

    def english_words(self) -> dict[str, int]:
        return self.vocab.stoi

    # ------------------------------------------------------------------ run directory
    def save(self, run_dir: Path) -> None:
        dst = Path(run_dir) / VOCAB_FILE
        if not dst.is_file():
            self.vocab.save(dst)

    @classmethod
    def load(cls, cfg: RunConfig, run_dir: Path) -> CaptioningTask:
        path = Path(run_dir) / VOCAB_FILE
        return cls(cfg, WordVocab.load(path) if path.is_file() else None)
