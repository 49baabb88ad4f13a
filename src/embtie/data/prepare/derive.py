"""How embtie's file is made from the file a source serves (``DataEntry.derive``).

Each derivation writes ``dst`` from ``src``; ``fetch`` brings another source it needs (the Flickr8k test
image list, to hold the test captions apart). Each is checked in tests against the copy in ../shared/data.
"""

from __future__ import annotations

import gzip
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

from embtie.data.catalogue import Source
from embtie.errors import DataError

Fetch = Callable[[Source], Path]
Derivation = Callable[[Path, Path, Fetch], None]


def copy(src: Path, dst: Path, fetch: Fetch) -> None:
    shutil.copyfile(src, dst)


def gunzip(src: Path, dst: Path, fetch: Fetch) -> None:
    try:
        with gzip.open(src, "rb") as f, open(dst, "wb") as out:
            shutil.copyfileobj(f, out)
    except (OSError, EOFError, zlib.error) as e:
        raise DataError(f"{src} is not a valid gzip file ({e}); delete it and run the command again") from None


def gzip_9n(src: Path, dst: Path, fetch: Fetch) -> None:
    """``gzip -9 -n`` (GNU gzip, whose deflate zlib does not reproduce byte for byte)."""
    exe = shutil.which("gzip")
    if exe is None:
        raise DataError("this file is stored as GNU `gzip -9 -n` makes it; install gzip (e.g. apt-get install gzip)")
    with open(src, "rb") as f, open(dst, "wb") as out:
        subprocess.run([exe, "-9", "-n", "-c"], stdin=f, stdout=out, check=True)


def gzip_ptb_train(src: Path, dst: Path, fetch: Fetch) -> None:
    """The gzip file Lasagne/Recipes stored (zlib level 6, name ptb.train.txt, its mtime), byte for byte."""
    data = src.read_bytes()
    c = zlib.compressobj(6, zlib.DEFLATED, -15, 8)
    body = c.compress(data) + c.flush()
    header = b"\x1f\x8b\x08\x08" + struct.pack("<I", 1432337831) + b"\x00\x03" + b"ptb.train.txt\x00"
    dst.write_bytes(header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF))


_FLICKR_NAME = re.compile(rb"^\d+_[0-9a-f]{10}\.jpg")


def flickr8k_names(src: Path, dst: Path, fetch: Fetch) -> None:
    """The lines that start with a Flickr image name (the source repository added images of its own)."""
    dst.write_bytes(b"".join(line for line in src.read_bytes().splitlines(keepends=True) if _FLICKR_NAME.match(line)))


def _flickr8k_test_images(fetch: Fetch) -> set[bytes]:
    from embtie.data.catalogue import FLICKR8K_TEST_LIST

    return {line.strip() for line in fetch(FLICKR8K_TEST_LIST).read_bytes().splitlines() if _FLICKR_NAME.match(line)}


def _flickr8k_captions(src: Path, dst: Path, fetch: Fetch, test: bool) -> None:
    images = _flickr8k_test_images(fetch)
    lines = [line for line in src.read_bytes().splitlines(keepends=True) if _FLICKR_NAME.match(line)]
    dst.write_bytes(b"".join(line for line in lines if (line.split(b"#", 1)[0] in images) == test))


def flickr8k_captions_train_dev(src: Path, dst: Path, fetch: Fetch) -> None:
    """Captions of every Flickr image but the 1000 test images (whose captions are the test split)."""
    _flickr8k_captions(src, dst, fetch, test=False)


def flickr8k_captions_test(src: Path, dst: Path, fetch: Fetch) -> None:
    """Captions of the 1000 test images."""
    _flickr8k_captions(src, dst, fetch, test=True)


DERIVATIONS: dict[str, Derivation] = {
    "copy": copy,
    "gunzip": gunzip,
    "gzip-9n": gzip_9n,
    "gzip-ptb-train": gzip_ptb_train,
    "flickr8k-names": flickr8k_names,
    "flickr8k-captions-train-dev": flickr8k_captions_train_dev,
    "flickr8k-captions-test": flickr8k_captions_test,
}
