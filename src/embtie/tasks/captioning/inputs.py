"""The captions, vocabulary and image features of a captioning run.

- Data: a captions file (``IMAGE#k<TAB>caption``), the official 6000/1000/1000 image lists (or your
  own), and the features of the images, extracted once by a frozen encoder (``data.encoder``) into
  ``data.feature_dir`` by ``embtie prepare-captions`` (``embtie.data.image_features``).
- Words as the paper: lowercased, words of letters and digits, those seen at least ``data.min_count``
  (5) times in the training captions, the rest <unk> (``embtie.data.caption_corpus``, ``WordVocab``).
"""

from __future__ import annotations

from pathlib import Path

from torch import Tensor

from embtie.data import caption_corpus as capdata
from embtie.data.files import verify
from embtie.data.image_features import cached_names, load_features
from embtie.data.word_vocab import WordVocab
from embtie.errors import ConfigError, DataError
from embtie.models.captioner import FeatureKind
from embtie.tasks.captioning.config import CaptionDataConfig


def split_names(d: CaptionDataConfig, split: str) -> list[str]:
    """The images of ``split`` (its list file, or the official one), cut to the split's limit."""
    path = {"train": d.train_images, "valid": d.valid_images, "test": d.test_images}.get(split)
    names = capdata.read_split(split, path)
    limit = {"train": d.train_limit, "valid": d.valid_limit}.get(split)
    return names[:limit] if limit is not None else names


def check_data(d: CaptionDataConfig) -> None:
    """The captions file is intact and every train/valid image has cached features."""
    if d.captions_file is None:
        verify(capdata.FLICKR8K_CAPTIONS.path(), capdata.FLICKR8K_CAPTIONS.sha256)
    names = [n for s in ("train", "valid") for n in split_names(d, s)]
    have = cached_names(d.features())
    missing = [n for n in names if n not in have]
    if missing:
        raise DataError(
            f"{len(missing)} of {len(names)} train/valid images have no cached features in {d.features()} "
            f"(first: {missing[0]}); run `embtie prepare-captions --images DIR --out {d.features()}` first"
        )


class CaptionCorpus:
    """The captions (per captions file) and the cached image features (per list of images) of a run,
    each read once. ``feature_kind`` and ``feature_dim``: the features the model reads."""

    def __init__(self, d: CaptionDataConfig, feature_kind: FeatureKind, feature_dim: int) -> None:
        self.d, self.feature_kind, self.feature_dim = d, feature_kind, feature_dim
        self._captions: dict[str | None, dict[str, list[str]]] = {}
        self._feats: dict[tuple[str, ...], Tensor] = {}

    def captions(self, path: str | Path | None = None) -> dict[str, list[str]]:
        """image -> its tokenized captions, from ``path`` or the run's captions file."""
        key = None if path is None else str(path)
        if key not in self._captions:
            src = self.d.captions_file if path is None else path
            self._captions[key] = capdata.read_captions(src, "captions file" if path is None else "--test-file")
        return self._captions[key]

    def references(self, split: str, path: str | Path | None = None) -> tuple[list[str], list[list[str]]]:
        """The images of ``split`` and their tokenized captions (from ``path`` when given)."""
        names = split_names(self.d, split)
        if path is None and split == "test" and self.d.captions_file is None:  # the test captions' own file
            return names, capdata.captions_of(names, capdata.read_test_captions(), split, "Flickr8k.test.token.txt")
        source = str(path) if path is not None else (self.d.captions_file or "Flickr8k.token.txt")
        return names, capdata.captions_of(names, self.captions(path), split, source)

    def learn_vocab(self) -> WordVocab:
        """The words of the training captions seen at least ``min_count`` times."""
        _, caps = self.references("train")
        return WordVocab.from_texts((c for cs in caps for c in cs), self.d.min_count)

    def features(self, names: list[str]) -> Tensor:
        """The cached features (of the model's kind) of images ``names``: (N, C) or (N, L, C)."""
        key = tuple(names)
        if key not in self._feats:
            feats = load_features(self.d.features(), names, self.feature_kind)
            want = self.feature_dim
            if feats.shape[-1] != want:
                raise ConfigError(f"the cached features are {feats.shape[-1]} wide but model.feature_dim={want}; "
                                  f"set model.feature_dim={feats.shape[-1]}")  # fmt: skip
            self._feats[key] = feats
        return self._feats[key]
