"""Image captions: the datasets' caption files and split lists (Flickr8k, MSCOCO) and the paper's tokenization.

- Captions file (``Flickr8k.token.txt``): one ``IMAGE#k<TAB>caption`` per line (k: the caption's
  number, 0-4 in Flickr8k).
- Split lists (``Flickr_8k.{train,dev,test}Images.txt``): one image file name per line. The test
  images' captions are a file of their own (``Flickr8k.test.token.txt``, ``embtie data get flickr8k --split
  test``); a test evaluation may take a captions file the user supplies instead.
- MSCOCO (``embtie data get mscoco``, Karpathy's split; train holds his ``restval`` images too):
  ``mscoco/captions.<split>.txt`` in the same ``IMAGE#k<TAB>caption`` form and ``mscoco/images.<split>.txt``.
- Tokenization (Shalev et al.'s "basic tokenization"): lowercase, words of letters and digits
  (``[a-z0-9]+``, so "dog's" -> "dog s" and punctuation goes); the vocabulary keeps the training words
  seen at least ``min_count`` times (5 in the paper), the rest are ``<unk>`` (``WordVocab``).
"""

from __future__ import annotations

import re
from pathlib import Path

from embtie.data.files import DataFile, read_lines, require, user_file
from embtie.errors import DataError

_WORD = re.compile(r"[a-z0-9]+")

FLICKR8K_CAPTIONS = DataFile(
    "flickr8k/Flickr8k.token.txt", "179906e897e808c52e32315f821f852225d8f793cc2608552f7fa2ff825ecb5a"
)
FLICKR8K_TEST_CAPTIONS = DataFile(
    "flickr8k/Flickr8k.test.token.txt", "a9f0f2ef354cb51e42eda70598b37df6433ff68380ff26c7dd038da8e01e4c20"
)
FLICKR8K_SPLITS = {
    "train": DataFile(
        "flickr8k/Flickr_8k.trainImages.txt", "e330ddd5156a4c2d2e2b67bc587e70e588f2d132bd8a10dc54dcb71e58115d8e"
    ),
    "valid": DataFile(
        "flickr8k/Flickr_8k.devImages.txt", "18ba829f47f6df1cb830bf7f0506e2ddf333818925299babbd1bbcaf50fdc504"
    ),
    "test": DataFile(
        "flickr8k/Flickr_8k.testImages.txt", "c0924146c131458ceba45da59670fe9520eadce1e5cafffa16a817672a9b1f17"
    ),
}

MSCOCO_CAPTIONS = {s: DataFile(f"mscoco/captions.{s}.txt") for s in ("train", "valid", "test")}
MSCOCO_SPLITS = {s: DataFile(f"mscoco/images.{s}.txt") for s in ("train", "valid", "test")}
"""written by ``embtie data get mscoco`` (``embtie.data.prepare.mscoco``; no pins: unverified here)."""
MSCOCO_ZIPS = "COCO's train2014.zip and val2014.zip (http://images.cocodataset.org/zips/)"
"""the MSCOCO images (~19 GB, not fetched by embtie); unzipped, they are the folders train2014/ and val2014/."""


def captions_file(dataset: str, split: str) -> DataFile:
    """The file holding the captions of ``dataset``'s ``split`` (Flickr8k: train and valid share one file)."""
    if dataset == "mscoco":
        return MSCOCO_CAPTIONS[split]
    return FLICKR8K_TEST_CAPTIONS if split == "test" else FLICKR8K_CAPTIONS


def split_list(dataset: str, split: str) -> DataFile:
    """The image list of ``dataset``'s ``split`` (a DataError naming the splits for another name)."""
    lists = MSCOCO_SPLITS if dataset == "mscoco" else FLICKR8K_SPLITS
    if split not in lists:
        raise DataError(f"unknown split {split!r}; choose one of: {', '.join(lists)}")
    return lists[split]


def require_split(dataset: str, split: str) -> None:
    """The captions and image list of ``dataset``'s ``split`` are here; else one line naming the file and
    the ``embtie data get`` that brings it."""
    own = "give your own captions with --test-file CAPTIONS" if split == "test" else "set data.captions_file"
    require([captions_file(dataset, split), split_list(dataset, split)], dataset, split, own)


def tokenize(caption: str) -> str:
    """Lowercased words of letters and digits, joined by single spaces: "A dog's ball ." -> "a dog s ball"."""
    return " ".join(_WORD.findall(caption.lower()))


def parse_captions(lines: list[str], where: str) -> dict[str, list[str]]:
    """``IMAGE#k<TAB>caption`` lines -> image name -> its tokenized captions, in file order."""
    out: dict[str, list[str]] = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        key, sep, text = line.partition("\t")
        name = key.rpartition("#")[0] if "#" in key else key
        if not sep or not name.strip():
            raise DataError(f"{where} line {n} is not `IMAGE#k<TAB>caption`; give a Flickr8k.token.txt-style file")
        out.setdefault(name.strip(), []).append(tokenize(text))
    if not out:
        raise DataError(f"{where} holds no captions; give a Flickr8k.token.txt-style file (IMAGE#k<TAB>caption)")
    return out


def read_captions(path: str | Path | None = None, what: str = "captions file") -> dict[str, list[str]]:
    """The captions of a user file (``path``), or of the shipped Flickr8k file (checksum verified)."""
    if path is None:
        return parse_captions(read_lines(FLICKR8K_CAPTIONS.path(), FLICKR8K_CAPTIONS.sha256),
                              str(FLICKR8K_CAPTIONS.path()))  # fmt: skip
    p = user_file(path, what)
    return parse_captions(read_lines(p), f"{what} {p}")


def read_dataset_captions(dataset: str, split: str) -> dict[str, list[str]]:
    """The captions of ``dataset``'s ``split`` from the data root (checksum verified where pinned; a one-line
    error naming ``embtie data get`` when absent)."""
    f = captions_file(dataset, split)
    require_split(dataset, split)
    return parse_captions(read_lines(f.path(), f.sha256), str(f.path()))


def read_split(split: str, path: str | Path | None = None, dataset: str = "flickr8k") -> list[str]:
    """The image names of ``split`` (train, valid, test): a user list (``path``) or the dataset's own."""
    if path is not None:
        p = user_file(path, f"{split} image list")
        where = str(p)
        names = [line.strip() for line in read_lines(p) if line.strip()]
    else:
        f = split_list(dataset, split)
        require([f], dataset, split, f"give your own list with data.{split}_images")
        where = str(f.path())
        names = [line.strip() for line in read_lines(f.path(), f.sha256) if line.strip()]
    if not names:
        raise DataError(f"the {split} image list {where} is empty")
    return names


def captions_of(names: list[str], captions: dict[str, list[str]], split: str, source: str) -> list[list[str]]:
    """The captions of each image of a split; a DataError naming the fix when some images have none
    (the Flickr8k test captions are held out: give them with --test-file)."""
    lacking = [n for n in names if not captions.get(n)]
    if lacking:
        hint = " (test captions are held out: give them with --test-file CAPTIONS)" if split == "test" else ""
        raise DataError(
            f"{len(lacking)} of {len(names)} {split} images have no caption in {source} (first: {lacking[0]})"
            f"{hint}; give a captions file that covers the split"
        )
    return [captions[n] for n in names]
