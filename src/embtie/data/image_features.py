"""Image features for captioning, extracted once by a frozen encoder and cached on disk.

A feature cache is a folder::

    meta.json                 {"encoder", "image_size", "grid", "channels"}
    shard-00000.safetensors   spatial (N, L, C) float16, pooled (N, C) float32; metadata "names": the N
    shard-00001.safetensors   image file names, in row order
    ...

Each shard is written to a temporary name and renamed into place, so an interrupted extraction
leaves only whole shards; running it again skips the images already in a shard (resumable). The
pooled feature is the mean of the L spatial cells, taken in float32 before the spatial grid is stored
as float16 (a 7 x 7 x 1280 grid is 125 KB per image).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file
from torch import Tensor

from embtie import progress
from embtie.data.image_encoders import CAPTION_EXTRA, ImageEncoder
from embtie.data.subwords import cache_root
from embtie.errors import DataError
from embtie.files import save_tensors

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
_COCO_RELEASE = re.compile(r"COCO_([a-z]+[0-9]{4})_")
SHARD_SIZE = 256
META = "meta.json"


def default_image_dir(dataset: str = "flickr8k") -> Path:
    """``$EMBTIE_CACHE/<dataset>/images`` (``~/.cache/embtie/flickr8k/images`` by default)."""
    return cache_root() / dataset / "images"


def image_file(image_dir: str | Path, name: str) -> Path:
    """Where image ``name`` is in ``image_dir``: the file itself, or an MSCOCO image in the folder of its
    release, as COCO's zips unpack (``COCO_val2014_000000391895.jpg`` in ``val2014/``); the flat path when
    neither is there."""
    d = Path(image_dir).expanduser()
    flat = d / name
    release = _COCO_RELEASE.match(name)
    if release is not None and not flat.is_file():
        return d / release.group(1) / name
    return flat


def default_feature_dir(encoder: str, dataset: str = "flickr8k") -> Path:
    """``$EMBTIE_CACHE/<dataset>/features-<encoder>``."""
    return cache_root() / dataset / f"features-{encoder}"


def list_images(image_dir: str | Path) -> list[str]:
    """File names of the images (.jpg, .jpeg, .png) in ``image_dir``, sorted; a DataError when there are none."""
    d = Path(image_dir).expanduser()
    if not d.is_dir():
        raise DataError(f"image folder {d} does not exist; give --images DIR (the folder of the .jpg files)")
    names = sorted(p.name for p in d.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if not names:
        raise DataError(f"image folder {d} holds no .jpg/.jpeg/.png files; give the folder of the images")
    return names


def load_pixels(path: str | Path, size: int) -> Tensor:
    """One image file -> (3, size, size) float32 RGB pixels in [0, 255] (resized, aspect ratio not kept)."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise DataError(f"reading images needs Pillow: {CAPTION_EXTRA}") from None
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"image {p} does not exist; check the path")
    try:
        with Image.open(p) as im:
            rgb = im.convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
    except (OSError, UnidentifiedImageError) as e:
        raise DataError(f"cannot read image {p} ({e}); give a .jpg or .png image") from None
    return torch.from_numpy(np.asarray(rgb, dtype=np.float32).copy()).permute(2, 0, 1)


def encode_files(encoder: ImageEncoder, paths: list[Path]) -> Tensor:
    """Image files -> (B, L, C) float32 features."""
    return encoder(torch.stack([load_pixels(p, encoder.image_size) for p in paths]))


# ---------------------------------------------------------------------------- the cache on disk


def _shards(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("shard-*.safetensors"))


def _shard_names(path: Path) -> list[str]:
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    return json.loads(meta.get("names", "[]"))


def cached_names(cache_dir: str | Path) -> dict[str, tuple[Path, int]]:
    """image name -> (its shard, row) of every image in the cache (empty when there is none)."""
    out: dict[str, tuple[Path, int]] = {}
    d = Path(cache_dir).expanduser()
    if d.is_dir():
        for shard in _shards(d):
            for row, name in enumerate(_shard_names(shard)):
                out[name] = (shard, row)
    return out


def _check_meta(cache_dir: Path, encoder: ImageEncoder) -> None:
    """Write meta.json for a new cache; refuse a cache made by another encoder."""
    meta = {"encoder": encoder.name, "image_size": encoder.image_size, "grid": encoder.grid,
            "channels": encoder.channels}  # fmt: skip
    path = cache_dir / META
    if path.is_file():
        have = json.loads(path.read_text(encoding="utf-8"))
        if have != meta:
            raise DataError(
                f"feature cache {cache_dir} was made by encoder {have.get('encoder')!r} ({have}), not {meta}; "
                "give another --out folder or remove this one"
            )
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta), encoding="utf-8")


def _write_shard(cache_dir: Path, index: int, names: list[str], spatial: Tensor) -> None:
    """Write one shard atomically (temporary file, then rename)."""
    final = cache_dir / f"shard-{index:05d}.safetensors"
    tmp = cache_dir / f".tmp-{final.name}"
    tensors = {"spatial": spatial.to(torch.float16).contiguous(), "pooled": spatial.mean(1).contiguous()}
    try:
        save_tensors(tensors, tmp, metadata={"names": json.dumps(names)})
        load_file(str(tmp))  # read back before it is renamed into place: a short write is never read as a shard
        os.replace(tmp, final)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


@dataclass
class CacheReport:
    cached_before: int
    """images of the request already in the cache (skipped)."""
    added: int
    cache_dir: Path


def build_feature_cache(
    image_dir: str | Path,
    cache_dir: str | Path,
    encoder: ImageEncoder,
    names: list[str] | None = None,
    *,
    batch_size: int = 16,
    shard_size: int = SHARD_SIZE,
    fix: str = "give the folder that holds them with --images DIR",
) -> CacheReport:
    """Encode the images ``names`` of ``image_dir`` (default: all of them) that are not in the cache yet,
    ``shard_size`` images per shard, with a progress bar; ``fix``: what the error for missing images says to do."""
    src = Path(image_dir).expanduser()
    names = list_images(src) if names is None else names
    missing = [n for n in names if not image_file(src, n).is_file()]
    if missing:
        raise DataError(
            f"{len(missing)} of {len(names)} images are not in {src} (first: {missing[0]}): no file "
            f"{image_file(src, missing[0])}; {fix}"
        )
    d = Path(cache_dir).expanduser()
    _check_meta(d, encoder)
    have = cached_names(d)
    todo = [n for n in dict.fromkeys(names) if n not in have]
    shards = _shards(d)
    index = 1 + max((int(p.stem.split("-")[1]) for p in shards), default=-1)
    bar = progress.bar(total=len(todo), desc=f"features {encoder.name}", unit="img")
    try:
        for start in range(0, len(todo), shard_size):
            chunk = todo[start : start + shard_size]
            parts = []
            for b in range(0, len(chunk), batch_size):
                parts.append(encode_files(encoder, [image_file(src, n) for n in chunk[b : b + batch_size]]))
                bar.update(len(chunk[b : b + batch_size]))
            _write_shard(d, index, chunk, torch.cat(parts))
            index += 1
    finally:
        bar.close()
    return CacheReport(cached_before=len(names) - len(todo), added=len(todo), cache_dir=d)


def load_features(cache_dir: str | Path, names: list[str], kind: str, what: str = "images") -> Tensor:
    """The cached ``kind`` features ("pooled": (N, C) float32, "spatial": (N, L, C) float16) of ``names``,
    in that order; a DataError naming the command that fills the cache when some are missing."""
    d = Path(cache_dir).expanduser()
    index = cached_names(d)
    missing = [n for n in names if n not in index]
    if missing:
        raise DataError(
            f"{len(missing)} of {len(names)} {what} have no features in {d} (first: {missing[0]}); "
            f"run `embtie prepare-captions --images DIR --out {d}` first"
        )
    by_shard: dict[Path, list[int]] = {}
    for i, n in enumerate(names):
        by_shard.setdefault(index[n][0], []).append(i)
    out: Tensor | None = None
    for shard, rows in by_shard.items():
        t = load_file(str(shard))[kind]
        if out is None:
            out = t.new_empty((len(names), *t.shape[1:]))
        out[rows] = t[[index[names[i]][1] for i in rows]]
    assert out is not None
    return out
