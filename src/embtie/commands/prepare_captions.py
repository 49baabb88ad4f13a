"""``embtie prepare-captions [--dataset flickr8k|mscoco] [--images DIR] [--out DIR]``: extract and cache the
image features of a captioning dataset once (pooled and spatial, by a frozen encoder), resumably, with a
progress bar. Flickr8k: every image of the folder; MSCOCO: the images of Karpathy's split lists
(``embtie data get mscoco``), all three splits or those given with ``--split``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from embtie.commands.common import number_arg, path_arg

HELP = "extract the image features of a captioning dataset into the feature cache (resumable)"
DESCRIPTION = HELP
EXAMPLES: tuple[str, ...] = ()  # a captioning run needs the Flickr8k images (docs/captioning.md)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", choices=("flickr8k", "mscoco"), default="flickr8k",
                        help="the captioning dataset (default: %(default)s)")  # fmt: skip
    parser.add_argument("--split", action="append", choices=("train", "valid", "test"),
                        help="mscoco: only the images of this split (repeatable; default: all three)")  # fmt: skip
    parser.add_argument("--images", type=path_arg("--images"), metavar="DIR", help="folder of the images (default: "
                        "$EMBTIE_CACHE/DATASET/images, i.e. ~/.cache/embtie/DATASET/images; mscoco: train2014/ "
                        "and val2014/ inside it, as COCO's zips unpack, or all the files in it)")  # fmt: skip
    parser.add_argument("--out", type=path_arg("--out"), metavar="DIR", help="feature cache folder (default: "
                        "$EMBTIE_CACHE/DATASET/features-<encoder>, where captioning runs look)")  # fmt: skip
    parser.add_argument("--encoder", default="efficientnet-lite0", help="frozen image encoder (default: %(default)s)")
    parser.add_argument(
        "--list",
        type=path_arg("--list"),
        metavar="FILE",
        help="only the images named in FILE (one a line), e.g. a split list",
    )
    parser.add_argument("--limit", type=number_arg(int, "--limit", ge=1),
                        help="only the first N images (flickr8k: sorted by name; mscoco: list order)")  # fmt: skip
    parser.add_argument(
        "--batch-size",
        type=number_arg(int, "--batch-size", ge=1, most=100_000),
        default=16,
        help="images per encoder batch (default: 16)",
    )
    parser.add_argument(
        "--threads", type=number_arg(int, "--threads", ge=1, most=1024), help="CPU threads (default: torch's)"
    )


def image_names(args: argparse.Namespace, images: Path) -> list[str]:
    """The images to encode: ``--list``, else MSCOCO's split lists, else every image of the folder."""
    from embtie.data.caption_corpus import read_split
    from embtie.data.image_features import list_images

    if args.list:
        return read_split("images", args.list)
    if args.dataset == "mscoco":
        return [n for s in args.split or ("train", "valid", "test") for n in read_split(s, None, "mscoco")]
    return list_images(images)


def run(args: argparse.Namespace) -> int:
    import torch

    from embtie.data.caption_corpus import MSCOCO_ZIPS
    from embtie.data.image_encoders import build_encoder
    from embtie.data.image_features import build_feature_cache, default_feature_dir, default_image_dir
    from embtie.errors import DataError

    images = Path(args.images).expanduser() if args.images else default_image_dir(args.dataset)
    if args.images is None and args.dataset == "flickr8k" and not images.is_dir():
        raise DataError(f"no image folder at {images} (the default); give --images DIR, the folder of the "
                        "Flickr8k .jpg files")  # fmt: skip
    names = image_names(args, images)
    names = names[: args.limit] if args.limit else names
    out = Path(args.out).expanduser() if args.out else default_feature_dir(args.encoder, args.dataset)
    fix = "give the folder that holds them with --images DIR"
    if args.dataset == "mscoco":
        fix = f"unzip {MSCOCO_ZIPS} into {images}, or give --images DIR (a run's data.image_dir)"
    if args.threads:
        torch.set_num_threads(args.threads)
    encoder = build_encoder(args.encoder)
    t0 = time.perf_counter()
    rep = build_feature_cache(images, out, encoder, names, batch_size=args.batch_size, fix=fix)
    dt = time.perf_counter() - t0
    rate = f", {rep.added / dt:.2f} images/s" if rep.added and dt > 0 else ""
    print(f"{len(names)} images in {rep.cache_dir}: {rep.cached_before} already cached, {rep.added} added "
          f"in {dt:.1f} s{rate} ({encoder.name}: {encoder.grid} x {encoder.channels} per image)")  # fmt: skip
    return 0
