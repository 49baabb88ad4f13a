"""The captions, vocabulary and image features of a captioning run.

- Data: the dataset's captions (``IMAGE#k<TAB>caption``) and image lists (Flickr8k's official
  6000/1000/1000; MSCOCO's Karpathy split as ``embtie data get mscoco`` writes it) or your own, and the
  features of the images, extracted once by a frozen encoder (``data.encoder``) from ``data.image_dir`` into
  ``data.feature_dir`` by ``embtie prepare-captions`` (``embtie.data.image_features``).
- Words as the paper: lowercased, words of letters and digits, those seen at least ``data.min_count``
  (5) times in the training captions, the rest <unk> (``embtie.data.caption_corpus``, ``WordVocab``).
"""

from __future__ import annotations

from pathlib import Path

from torch import Tensor

from embtie.data import caption_corpus as capdata
from embtie.data.files import verify
from embtie.data.image_features import cached_names, image_file, load_features
from embtie.data.word_vocab import WordVocab
from embtie.errors import ConfigError, DataError
from embtie.models.captioner import FeatureKind
from embtie.tasks.captioning.config import CaptionDataConfig


def split_names(d: CaptionDataConfig, split: str) -> list[str]:
    """The images of ``split`` (its list file, or the official one), cut to the split's limit."""
    path = {"train": d.train_images, "valid": d.valid_images, "test": d.test_images}.get(split)
    names = capdata.read_split(split, path, d.dataset)
    limit = {"train": d.train_limit, "valid": d.valid_limit}.get(split)
    return names[:limit] if limit is not None else names


def prepare_command(d: CaptionDataConfig) -> str:
    """The ``embtie prepare-captions`` that fills the run's feature cache from its image folder."""
    enc = "" if d.encoder == "efficientnet-lite0" else f" --encoder {d.encoder}"
    return f"embtie prepare-captions --dataset {d.dataset}{enc} --images {d.images()} --out {d.features()}"


def missing_images(d: CaptionDataConfig, names: list[str], what: str) -> DataError:
    """The error for images without cached features: the image file expected, when it is missing, else the
    ``embtie prepare-captions`` that extracts them."""
    first = image_file(d.images(), names[0])
    if not first.is_file():
        put = f"unzip {capdata.MSCOCO_ZIPS} there" if d.dataset == "mscoco" else "put the images there"
        return DataError(
            f"{len(names)} {what} have no cached features in {d.features()} and the images are not here either: "
            f"no file {first}; {put} or set data.image_dir, then run `{prepare_command(d)}`"
        )
    return DataError(
        f"{len(names)} {what} have no cached features in {d.features()} (first: {names[0]}); run "
        f"`{prepare_command(d)}` first"
    )


def check_data(d: CaptionDataConfig) -> None:
    """The captions and image lists are here (and intact where pinned) and every train/valid image has
    cached features."""
    if d.captions_file is None:
        for split in ("train", "valid"):
            capdata.require_split(d.dataset, split)
            f = capdata.captions_file(d.dataset, split)
            verify(f.path(), f.sha256)
    names = [n for s in ("train", "valid") for n in split_names(d, s)]
    have = cached_names(d.features())
    missing = [n for n in names if n not in have]
    if missing:
        raise missing_images(d, missing, f"of {len(names)} train/valid images")


class CaptionCorpus:
    """The captions (per captions file) and the cached image features (per list of images) of a run,
    each read once. ``feature_kind`` and ``feature_dim``: the features the model reads."""

    def __init__(self, d: CaptionDataConfig, feature_kind: FeatureKind, feature_dim: int) -> None:
        self.d, self.feature_kind, self.feature_dim = d, feature_kind, feature_dim
        self._captions: dict[str | None, dict[str, list[str]]] = {}
        self._feats: dict[tuple[str, ...], Tensor] = {}

    def captions(self, path: str | Path | None = None, split: str = "train") -> dict[str, list[str]]:
        """image -> its tokenized captions, from ``path``, the run's captions file, or the dataset's file
        that holds ``split``."""
        if path is None and self.d.captions_file is None:
            f = capdata.captions_file(self.d.dataset, split)
            if f.relpath not in self._captions:
                self._captions[f.relpath] = capdata.read_dataset_captions(self.d.dataset, split)
            return self._captions[f.relpath]
        key = None if path is None else str(path)
        if key not in self._captions:
            src = self.d.captions_file if path is None else path
            assert src is not None
            self._captions[key] = capdata.read_captions(src, "captions file" if path is None else "--test-file")
        return self._captions[key]

    def references(self, split: str, path: str | Path | None = None) -> tuple[list[str], list[list[str]]]:
        """The images of ``split`` and their tokenized captions (from ``path`` when given)."""
        names = split_names(self.d, split)
        if path is not None:
            source = str(path)
        elif self.d.captions_file is not None:
            source = self.d.captions_file
        else:
            source = capdata.captions_file(self.d.dataset, split).relpath
        return names, capdata.captions_of(names, self.captions(path, split), split, source)

    def learn_vocab(self) -> WordVocab:
        """The words of the training captions seen at least ``min_count`` times."""
        _, caps = self.references("train")
        return WordVocab.from_texts((c for cs in caps for c in cs), self.d.min_count)

    def features(self, names: list[str]) -> Tensor:
        """The cached features (of the model's kind) of images ``names``: (N, C) or (N, L, C)."""
        key = tuple(names)
        if key not in self._feats:
            have = cached_names(self.d.features())
            missing = [n for n in names if n not in have]
            if missing:
                raise missing_images(self.d, missing, f"of {len(names)} images")
            feats = load_features(self.d.features(), names, self.feature_kind)
            want = self.feature_dim
            if feats.shape[-1] != want:
                raise ConfigError(f"the cached features are {feats.shape[-1]} wide but model.feature_dim={want}; "
                                  f"set model.feature_dim={feats.shape[-1]}")  # fmt: skip
            self._feats[key] = feats
        return self._feats[key]
