"""The ``data`` section of a captioning run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from embtie.data.image_features import default_feature_dir, default_image_dir
from embtie.schema import Declared, Setting


@dataclass
class CaptionDataConfig(Declared):
    """Captions, image lists, cached features, vocabulary, batching and decoding of a captioning run."""

    section = "data"

    dataset: Annotated[
        Literal["flickr8k", "mscoco"],
        Setting(
            "the image-caption corpus: flickr8k (the official 6000/1000/1000 split) or mscoco (Karpathy's split: "
            "train 113,287 images with his restval, valid 5,000, test 5,000; `embtie data get mscoco`)"
        ),
    ] = "flickr8k"
    captions_file: Annotated[
        str | None,
        Setting(
            "training/validation captions (IMAGE#k<TAB>caption lines)",
            null="the dataset's: flickr8k/Flickr8k.token.txt, or mscoco/captions.<split>.txt in the data root",
        ),
    ] = None
    train_images: Annotated[
        str | None, Setting("a file listing the training images, one name a line", null="the dataset's split")
    ] = None
    valid_images: Annotated[
        str | None, Setting("a file listing the validation images, one name a line", null="the dataset's split")
    ] = None
    test_images: Annotated[
        str | None, Setting("a file listing the test images, one name a line", null="the dataset's split")
    ] = None
    encoder: Annotated[
        str, Setting("the frozen image encoder (embtie.data.image_encoders) whose features are cached")
    ] = "efficientnet-lite0"
    feature_dir: Annotated[
        str | None, Setting("the feature cache", null="$EMBTIE_CACHE/<dataset>/features-<encoder>")
    ] = None
    image_dir: Annotated[
        str | None,
        Setting(
            "the image files: `embtie prepare-captions --images` extracts their features (a run without them names "
            "that command with this folder) and comparison reports show them beside example captions; training "
            "reads the cached features. MSCOCO: train2014/ and val2014/ as COCO's zips unpack, or the files flat",
            null="$EMBTIE_CACHE/<dataset>/images",
        ),
    ] = None
    min_count: Annotated[int, Setting("keep training words seen at least this often; the rest are <unk>", ge=1)] = 5
    max_len: Annotated[
        int, Setting("training captions are cut to this many words; decoded captions have at most this many", ge=1)
    ] = 25
    batch_size: Annotated[int, Setting("(image, caption) pairs per global training batch", ge=1)] = 32
    eval_batch: Annotated[int, Setting("pairs (loss) or images (decoding) per evaluation batch", ge=1)] = 200
    train_limit: Annotated[
        int | None, Setting("use only the first N training images (tests, quick runs)", ge=1, null="all")
    ] = None
    valid_limit: Annotated[int | None, Setting("use only the first N validation images", ge=1, null="all")] = None
    beam: Annotated[int, Setting("beam width of decoding (1: greedy)", ge=1)] = 10
    lenpen: Annotated[float, Setting("beam ranking score sum log p / (length + 1) ** lenpen", ge=0)] = 1.0
    rare_max: Annotated[
        int,
        Setting(
            "vocabulary usage: a generated word is rare when seen at most this often in the training captions", ge=0
        ),
    ] = 20

    def features(self) -> Path:
        """The feature cache folder."""
        if self.feature_dir:
            return Path(self.feature_dir).expanduser()
        return default_feature_dir(self.encoder, self.dataset)

    def images(self) -> Path:
        """The image folder."""
        return Path(self.image_dir).expanduser() if self.image_dir else default_image_dir(self.dataset)
