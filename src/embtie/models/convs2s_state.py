"""The convolutional pieces of ConvS2S (``embtie.models.convs2s``) and their incremental decoding.

A ``GLUConv`` is one block ``x -> (GLU(conv(x)) + residual(x)) * sqrt(0.5)`` minus the residual sum
(which the model does, after the decoder's attention); the full pass convolves the whole sequence
with one ``F.conv1d``. A causal block decodes one position at a time from a buffer holding its
last K-1 inputs, (B, K-1, C_in), so a step costs O(K) whatever the prefix length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def fairseq_linear(in_dim: int, out_dim: int, dropout: float = 0.0) -> nn.Linear:
    """nn.Linear with fairseq fconv's init: N(0, sqrt((1 - dropout) / in_dim)), zero bias."""
    lin = nn.Linear(in_dim, out_dim)
    nn.init.normal_(lin.weight, 0.0, math.sqrt((1.0 - dropout) / in_dim))
    nn.init.zeros_(lin.bias)
    return lin


class GradScale(torch.autograd.Function):
    """Identity forward; the gradient is multiplied by ``scale`` (fairseq's GradMultiply)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, scale: float) -> Tensor:
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        return grad * ctx.scale, None


class GLUConv(nn.Module):
    """A 1-D convolution over time to 2C channels followed by a GLU, and the block's residual path.

    ``causal``: padded with K-1 zeros on the left (decoder); otherwise symmetrically (encoder; for
    an even K one more on the right, as fairseq). The residual is x itself, or a linear map when the
    channel count changes.
    """

    def __init__(self, in_channels: int, channels: int, kernel: int, dropout: float, causal: bool) -> None:
        super().__init__()
        self.kernel = kernel
        self.causal = causal
        self.weight = nn.Parameter(torch.empty(2 * channels, in_channels, kernel))
        self.bias = nn.Parameter(torch.zeros(2 * channels))
        nn.init.normal_(self.weight, 0.0, math.sqrt(4.0 * (1.0 - dropout) / (kernel * in_channels)))
        self.proj = fairseq_linear(in_channels, channels) if in_channels != channels else None
        self.drop = nn.Dropout(dropout)

    def residual(self, x: Tensor) -> Tensor:
        """(B, T, C_in) -> (B, T, C)."""
        return x if self.proj is None else self.proj(x)

    def padding(self) -> tuple[int, int]:
        """(left, right) zeros added along time before the convolution."""
        k = self.kernel
        if self.causal:
            return k - 1, 0
        return (k - 1) // 2, k // 2

    def forward(self, x: Tensor) -> Tensor:
        """x (B, T, C_in), already zero at padded positions -> GLU(conv(dropout(x))) (B, T, C)."""
        y = F.pad(self.drop(x).transpose(1, 2), self.padding())
        return F.glu(F.conv1d(y, self.weight, self.bias), dim=1).transpose(1, 2)

    def step(self, x: Tensor, buffer: Tensor) -> tuple[Tensor, Tensor]:
        """One causal step: x (B, 1, C_in), buffer (B, K-1, C_in) the previous K-1 inputs ->
        (GLU(conv) at this position (B, 1, C), the buffer for the next step (B, K-1, C_in))."""
        window = torch.cat([buffer, self.drop(x)], dim=1)  # (B, K, C_in)
        y = F.glu(F.conv1d(window.transpose(1, 2), self.weight, self.bias), dim=1).transpose(1, 2)
        return y, window[:, 1:]


def conv_buffers(layers: Sequence[GLUConv], widths: list[int], like: Tensor) -> list[Tensor]:
    """Initial (all-zero) input histories (B, K_l - 1, C_in_l) of every causal layer, B and dtype of
    ``like`` (B, ...)."""
    b = like.shape[0]
    return [like.new_zeros((b, layer.kernel - 1, w)) for layer, w in zip(layers, widths)]
