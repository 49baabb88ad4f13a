"""Image captioning (``task: captioning``): Flickr8k with cached image features (Shalev et al., Table 1).

- Data: a captions file (``IMAGE#k<TAB>caption``), the official 6000/1000/1000 image lists (or your
  own), and the features of the images, extracted once by a frozen encoder (``data.encoder``) into
  ``data.feature_dir`` by ``embtie prepare-captions`` (``embtie.data.image_features``).
- Words as the paper: lowercased, words of letters and digits, those seen at least ``data.min_count``
  (5) times in the training captions, the rest <unk> (``embtie.data.captions``, ``WordVocab``).
- Models (``embtie.models.captioner``): ``show-tell`` reads the pooled features, ``show-attend-tell``
  the spatial grid; the word embedding and output layer are the run's sharing object.
- Loss: ``sharing.loss(h, y)`` + the model's penalty (Show-Attend-Tell's doubly stochastic term) +
  ``model.regularization()``; teacher forcing.
- Quality: ``evaluate_captions`` decodes each image once (beam ``data.beam``) and scores BLEU-1..4,
  METEOR, ROUGE-L, CIDEr (``embtie.analysis.caption_scores``) and vocabulary usage; ``score('bleu')``
  is BLEU-4 of greedy captions of the validation images (the plateau schedule / early stopping).
  Test captions are held out: a test evaluation takes a captions file from the user.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from embtie import models, seeding, sharing
from embtie.analysis.caption_scores import coco_scores
from embtie.analysis.vocab_usage import UNK, vocabulary_usage
from embtie.config import RunConfig
from embtie.data import captions as capdata
from embtie.data.caption_batches import CaptionBatch, CaptionPairs, epoch_order, make_caption_batch
from embtie.data.files import data_root, verify
from embtie.data.image_features import cached_names, default_feature_dir, default_image_dir, encode_files, load_features
from embtie.data.subwords import PAD
from embtie.data.word_vocab import WordVocab
from embtie.errors import ConfigError, DataError
from embtie.evaluation.beam_search import translate_ids
from embtie.evaluation.loss_meter import LossMeter
from embtie.models.image_encoders import build_encoder
from embtie.runtime import autocast
from embtie.tasks.base import StepLoss, Task
from embtie.tasks.capabilities import Captions
from embtie.tasks.registry import register

VOCAB_FILE = "vocab.words.txt"


@dataclass
class CaptionDataConfig:
    """Captions, image lists, cached features, vocabulary, batching and decoding of a captioning run."""

    dataset: Literal["flickr8k"] = "flickr8k"
    captions_file: str | None = None
    """training/validation captions (``IMAGE#k<TAB>caption``); null: the shipped Flickr8k.token.txt."""
    train_images: str | None = None
    """image list files (one name a line); null: the official Flickr8k split."""
    valid_images: str | None = None
    test_images: str | None = None
    encoder: str = "efficientnet-lite0"
    """the frozen image encoder (``embtie.models.image_encoders``) whose features are cached."""
    feature_dir: str | None = None
    """the feature cache; null: $EMBTIE_CACHE/flickr8k/features-<encoder> (~/.cache/embtie/...)."""
    image_dir: str | None = None
    """the image files, only for showing example captions with their images in comparison reports;
    null: $EMBTIE_CACHE/flickr8k/images (training reads the cached features, never the images)."""
    min_count: int = 5
    """keep training words seen at least this often; the rest are <unk>."""
    max_len: int = 25
    """training captions are cut to this many words; decoded captions have at most this many."""
    batch_size: int = 32
    """(image, caption) pairs per global training batch."""
    eval_batch: int = 200
    """pairs (loss) or images (decoding) per evaluation batch."""
    train_limit: int | None = None
    """use only the first N training images (tests, quick runs)."""
    valid_limit: int | None = None
    """use only the first N validation images."""
    beam: int = 10
    lenpen: float = 1.0
    """beam ranking score sum log p / (length + 1) ** lenpen."""
    rare_max: int = 20
    """vocabulary usage: a generated word is rare when seen at most this often in the training captions."""

    def validate(self) -> None:
        for k in ("min_count", "max_len", "batch_size", "eval_batch", "beam"):
            if getattr(self, k) < 1:
                raise ConfigError(f"data.{k}={getattr(self, k)} must be >= 1")
        for k in ("train_limit", "valid_limit"):
            if getattr(self, k) is not None and getattr(self, k) < 1:
                raise ConfigError(f"data.{k}={getattr(self, k)} must be >= 1 (or null for all)")
        if self.lenpen < 0 or self.rare_max < 0:
            raise ConfigError("data.lenpen and data.rare_max must be >= 0")

    def features(self) -> Path:
        return Path(self.feature_dir).expanduser() if self.feature_dir else default_feature_dir(self.encoder)

    def images(self) -> Path:
        return Path(self.image_dir).expanduser() if self.image_dir else default_image_dir(self.dataset)


def _feature_kind(cfg: RunConfig) -> str:
    return models.model_class(cfg.model.name).feature_kind


@register
class CaptioningTask(Task, Captions):
    """Captioning with cached image features; captions and metrics by ``evaluate_captions``."""

    name = "captioning"
    data_config = CaptionDataConfig
    metrics = ("loss", "bleu")

    def __init__(self, cfg: RunConfig, vocab: WordVocab | None = None) -> None:
        super().__init__(cfg)
        self.data: CaptionDataConfig = cfg.data
        self._captions: dict[str | None, dict[str, list[str]]] = {}
        self._feats: dict[tuple[str, ...], Tensor] = {}
        self._pairs: dict[str, CaptionPairs] = {}
        self._order: tuple[int, list[list[int]]] | None = None
        self.vocab = vocab if vocab is not None else self._learn_vocab()

    @classmethod
    def check_config(cls, cfg: RunConfig) -> None:
        if not hasattr(models.model_class(cfg.model.name), "feature_kind"):
            names = [n for n in models.names() if hasattr(models.model_class(n), "feature_kind")]
            raise ConfigError(f"model {cfg.model.name!r} is not a captioning model; use model.name= one of: "
                              f"{', '.join(names)}")  # fmt: skip

    @classmethod
    def check_data(cls, cfg: RunConfig) -> None:
        d: CaptionDataConfig = cfg.data
        root = data_root()
        if d.captions_file is None:
            verify(capdata.FLICKR8K_CAPTIONS.path(root), capdata.FLICKR8K_CAPTIONS.sha256)
        names = [n for s in ("train", "valid") for n in cls._split_names(d, s)]
        have = cached_names(d.features())
        missing = [n for n in names if n not in have]
        if missing:
            raise DataError(
                f"{len(missing)} of {len(names)} train/valid images have no cached features in {d.features()} "
                f"(first: {missing[0]}); run `embtie prepare-captions --images DIR --out {d.features()}` first"
            )

    # ------------------------------------------------------------------ data
    @staticmethod
    def _split_names(d: CaptionDataConfig, split: str) -> list[str]:
        path = {"train": d.train_images, "valid": d.valid_images, "test": d.test_images}.get(split)
        names = capdata.read_split(split, path)
        limit = {"train": d.train_limit, "valid": d.valid_limit}.get(split)
        return names[:limit] if limit is not None else names

    def captions(self, path: str | Path | None = None) -> dict[str, list[str]]:
        key = None if path is None else str(path)
        if key not in self._captions:
            src = self.data.captions_file if path is None else path
            self._captions[key] = capdata.read_captions(src, "captions file" if path is None else "--test-file")
        return self._captions[key]

    def references(self, split: str, path: str | Path | None = None) -> tuple[list[str], list[list[str]]]:
        """The images of ``split`` and their tokenized captions (from ``path`` when given)."""
        names = self._split_names(self.data, split)
        source = str(path) if path is not None else (self.data.captions_file or "Flickr8k.token.txt")
        return names, capdata.captions_of(names, self.captions(path), split, source)

    def _learn_vocab(self) -> WordVocab:
        _, caps = self.references("train")
        return WordVocab.from_texts((c for cs in caps for c in cs), self.data.min_count)

    def features(self, names: list[str]) -> Tensor:
        """The cached features (of the model's kind) of images ``names``: (N, C) or (N, L, C)."""
        key = tuple(names)
        if key not in self._feats:
            feats = load_features(self.data.features(), names, _feature_kind(self.cfg))
            want = self.cfg.model.feature_dim
            if feats.shape[-1] != want:
                raise ConfigError(f"the cached features are {feats.shape[-1]} wide but model.feature_dim={want}; "
                                  f"set model.feature_dim={feats.shape[-1]}")  # fmt: skip
            self._feats[key] = feats
        return self._feats[key]

    def pairs(self, split: str, path: str | Path | None = None) -> tuple[Tensor, CaptionPairs]:
        names, caps = self.references(split, path)
        key = f"{split}|{path}"
        if key not in self._pairs:
            self._pairs[key] = CaptionPairs.encode(caps, self.vocab, self.data.max_len)
        return self.features(names), self._pairs[key]

    # ------------------------------------------------------------------ model
    def build_model(self) -> nn.Module:
        c = self.cfg
        return seeding.build_with_streams(
            c.seed,
            lambda: sharing.build(c.sharing.name, vocab_size=len(self.vocab), dim=c.model.dim, **c.sharing.options),
            lambda s: models.build(c.model, s),
        )

    # ------------------------------------------------------------------ training
    def steps_per_epoch(self, world_size: int = 1) -> int:
        return math.ceil(len(self.pairs("train")[1]) / self.data.batch_size)

    def train_batch(self, epoch: int, index: int, rank: int, world_size: int, device: torch.device) -> CaptionBatch:
        feats, pairs = self.pairs("train")
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, epoch_order(len(pairs), self.data.batch_size, self.cfg.seed, epoch))
        idx = self._order[1][index]
        return make_caption_batch(feats, pairs, idx[rank::world_size] or idx[-1:]).to(device)

    def loss(self, model: nn.Module, batch: CaptionBatch, carry: Any) -> tuple[StepLoss, Any]:
        h, penalty = model(batch.feats, batch.tgt_in)
        ce = model.sharing.loss(h, batch.tgt_out, ignore_index=PAD)
        objective = ce + penalty + model.regularization()
        return StepLoss(objective=objective, ce=ce.detach(), tokens=batch.num_target_tokens), None

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(
        self, model: nn.Module, split: str = "valid", path: str | Path | None = None, max_batches: int | None = None
    ) -> dict[str, Any]:
        """Teacher-forced cross-entropy per reference word (and </s>) over every (image, caption) pair of
        ``split``, and its perplexity; ``path``: a captions file for the split (test captions are held out)."""
        feats, pairs = self.pairs(split, path)
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        meter = LossMeter()
        order = sorted(range(len(pairs)), key=lambda i: (len(pairs.ids[i]), i))
        try:
            for n, start in enumerate(range(0, len(order), self.data.eval_batch)):
                if max_batches is not None and n >= max_batches:
                    break
                b = make_caption_batch(feats, pairs, order[start : start + self.data.eval_batch]).to(device)
                with autocast(device, self.cfg.train.precision):
                    h, _ = model(b.feats, b.tgt_in)
                    ce = model.sharing.loss(h, b.tgt_out, ignore_index=PAD)
                meter.add(ce, b.num_target_tokens)
        finally:
            model.train(was_training)
        return {"split": split, "loss": meter.loss, "ppl": meter.ppl, "tokens": meter.tokens}

    @torch.no_grad()
    def caption(self, model: nn.Module, feats: Tensor, *, beam: int | None = None, lenpen: float | None = None
                ) -> list[str]:  # fmt: skip
        """Captions (space-joined words) of images with features ``feats`` (N, C) or (N, L, C)."""
        beam = self.data.beam if beam is None else beam
        lenpen = self.data.lenpen if lenpen is None else lenpen
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        out: list[str] = []
        step = max(1, self.data.eval_batch // max(beam, 1))
        try:
            for i in range(0, feats.shape[0], step):
                f = feats[i : i + step].to(device).float()
                src = torch.zeros((f.shape[0], 1), dtype=torch.long, device=device)
                with autocast(device, self.cfg.train.precision):
                    ids = translate_ids(model.bind(f), src, beam=beam, lenpen=lenpen, max_len_ratio=0.0,
                                        max_len_extra=self.data.max_len)  # fmt: skip
                out.extend(self.vocab.decode(t) for t in ids)
        finally:
            model.train(was_training)
        return out

    def caption_files(self, model: nn.Module, paths: list[Path], *, beam: int | None = None) -> list[str]:
        """Captions of image files, encoded now by the run's encoder (nothing is cached)."""
        grid = encode_files(build_encoder(self.data.encoder), paths)
        feats = grid.mean(1) if _feature_kind(self.cfg) == "pooled" else grid
        return self.caption(model, feats, beam=beam)

    def evaluate_captions(
        self,
        model: nn.Module,
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
        words = [[w for w in h.split() if w != UNK] for h in hyps]
        n_words = sum(len(h.split()) for h in hyps)
        vu = vocabulary_usage(words, dict(zip(self.vocab.words, self.vocab.counts)), self.data.rare_max)
        res: dict[str, Any] = {"split": split, "captions_file": None if captions_file is None else str(captions_file),
                               "images": len(names), "beam": beam, **coco_scores(hyps, refs, metrics),
                               "vocab_usage": vu["vu"], "rare_types": vu["types_rare"],
                               "rare_token_share": vu["rare_token_share"], "rare_max": self.data.rare_max,
                               "unk_share": (n_words - vu["tokens"]) / n_words if n_words else 0.0,
                               "mean_length": n_words / max(len(hyps), 1)}  # fmt: skip
        ppl = self.evaluate(model, split, captions_file)
        res.update(loss=ppl["loss"], ppl=ppl["ppl"], tokens=ppl["tokens"], names=names, hyps=hyps)
        return res

    def score(self, model: nn.Module, metric: str, result: dict[str, Any]) -> float:
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
