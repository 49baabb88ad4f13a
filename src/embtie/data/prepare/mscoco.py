"""MSCOCO 2014 captions with Karpathy's split (``dataset_coco.json`` of his ``caption_datasets.zip``):
train = his ``train`` + ``restval`` images (113,287), valid = ``val`` (5,000), test = ``test`` (5,000).

Writes ``mscoco/captions.{train,valid,test}.txt`` (``IMAGE#k<TAB>caption``, the raw sentence with its
whitespace squeezed, as the Flickr8k token file; embtie's caption tokenization applies when read) and
``mscoco/images.{train,valid,test}.txt`` (one image file name a line, in the json's order).

The images (~19 GB) are not fetched: COCO's ``train2014.zip`` and ``val2014.zip`` unpack into ``train2014/``
and ``val2014/`` under ``$EMBTIE_CACHE/mscoco/images`` (or a run's ``data.image_dir``), where ``embtie
prepare-captions --dataset mscoco`` reads them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from embtie.data.prepare.archives import zip_member
from embtie.data.prepare.iwslt14 import write_lines
from embtie.errors import DataError

SPLITS = {"train": "train", "restval": "train", "val": "valid", "test": "test"}


def prepare(archives: list[Path], out: Path, say: Callable[[str], None]) -> None:
    archive = archives[0]
    try:
        data = json.loads(zip_member(archive, "dataset_coco.json"))
        images = data["images"]
    except (ValueError, KeyError, TypeError) as e:
        raise DataError(f"dataset_coco.json in {archive} is not Karpathy's split file ({e}); is it the right "
                        "archive? delete it and run again") from None  # fmt: skip
    captions: dict[str, list[str]] = {s: [] for s in ("train", "valid", "test")}
    names: dict[str, list[str]] = {s: [] for s in ("train", "valid", "test")}
    for img in images:
        split = SPLITS.get(img.get("split"))
        if split is None:
            continue
        name = img["filename"]
        names[split].append(name)
        for k, sent in enumerate(img["sentences"]):
            captions[split].append(f"{name}#{k}\t{' '.join(sent['raw'].split())}")
    for split in captions:
        write_lines(out / "mscoco" / f"captions.{split}.txt", captions[split])
        write_lines(out / "mscoco" / f"images.{split}.txt", names[split])
    say(f"mscoco: {', '.join(f'{s} {len(n)} images' for s, n in names.items())}")
