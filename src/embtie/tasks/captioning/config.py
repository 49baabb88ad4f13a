"""The ``data`` section of a captioning run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from embtie.data.image_features import default_feature_dir, default_image_dir
from embtie.errors import ConfigError


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
