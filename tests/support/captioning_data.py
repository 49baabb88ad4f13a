"""A tiny Flickr8k-like captioning dataset for the tests: six generated images of two colours, captions
naming them, split lists and a feature cache of a stand-in image encoder ("tiny-test": 16 px -> a
2 x 2 grid x 8, registered here in embtie's encoder registry); and a small captioning config."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

from embtie.data.image_encoders import ImageEncoder, build_encoder, register_encoder
from embtie.data.image_features import build_feature_cache

PIL = pytest.importorskip("PIL.Image")

COLORS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 40, 220), "white": (250, 250, 250),
          "black": (5, 5, 5), "yellow": (230, 220, 20)}  # fmt: skip


class _Tiny(nn.Module):
    """2 x 2 average pool of the pixels, then a fixed random 3 -> 8 map: (B, 3, 16, 16) -> (B, 4, 8)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 8)
        with torch.no_grad():
            self.proj.weight.copy_(torch.linspace(-1, 1, 24).view(8, 3))
            self.proj.bias.zero_()

    def forward(self, x):
        return self.proj(nn.functional.avg_pool2d(x / 255.0, 8).flatten(2).transpose(1, 2))


register_encoder("tiny-test", lambda: ImageEncoder("tiny-test", 16, 8, 4, _Tiny()))


def draw_image(path: Path, top: str, bottom: str) -> None:
    im = PIL.new("RGB", (32, 32), COLORS[top])
    im.paste(COLORS[bottom], (0, 16, 32, 32))
    im.save(path)


def make_dataset(root: Path) -> Path:
    """A tiny Flickr8k-like dataset in ``root``: 6 images, captions naming their colours, split lists,
    the feature cache of "tiny-test"; the tests get it as the ``flickr`` fixture (tests/conftest.py)."""
    imgs = root / "images"
    imgs.mkdir()
    pairs = list(itertools.permutations(["red", "green", "blue", "white"], 2))[:6]
    lines, names = [], []
    for i, (a, b) in enumerate(pairs):
        name = f"{1000 + i}_abcdef{i:04d}.png"
        draw_image(imgs / name, a, b)
        names.append(name)
        for k, cap in enumerate([f"A {a} sky over {b} ground .", f"{a.title()} above {b} .", f"a {a} and {b} image"]):
            lines.append(f"{name}#{k}\t{cap}")
    (root / "captions.txt").write_text("\n".join(lines) + "\n")
    (root / "train.txt").write_text("\n".join(names) + "\n")
    (root / "valid.txt").write_text("\n".join(names[:3]) + "\n")
    (root / "test.txt").write_text("\n".join(names[3:]) + "\n")
    build_feature_cache(imgs, root / "feats", build_encoder("tiny-test"))
    return root


def caption_cfg(root: Path, model: str = "show-attend-tell", strategy: str = "tied", **train) -> dict:
    size = {"dim": 16, "hidden": 16, "feature_dim": 8, "dropout": 0.0}
    if model == "show-attend-tell":
        size["attn_dim"] = 8
    return {
        "task": "captioning", "seed": 0,
        "data": {"captions_file": str(root / "captions.txt"), "train_images": str(root / "train.txt"),
                 "valid_images": str(root / "valid.txt"), "test_images": str(root / "test.txt"),
                 "encoder": "tiny-test", "feature_dir": str(root / "feats"), "min_count": 2, "max_len": 8,
                 "batch_size": 6, "beam": 3},
        "model": {"name": model, **size},
        "sharing": {"name": strategy},
        "train": {"optimizer": "adamw", "lr": 0.02, "epochs": None, "max_steps": 40, "progress": False, "log_every": 5,
                  "device": "cpu", "grad_clip": 5.0, **train},
    }  # fmt: skip


def write_yaml(path: Path, cfg: dict) -> str:
    path.write_text(yaml.safe_dump(cfg))
    return str(path)
