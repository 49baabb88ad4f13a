"""Lightweight and dynamic convolutions over time (Wu et al. 2019), full and one step at a time.

Both are depthwise convolutions of x (B, T, C) with H heads: channel c belongs to head c // (C/H),
and the R = C/H channels of a head share its kernel of K weights, softmax-normalised over K (and
DropConnect-ed, ``F.dropout`` on the normalised weights, during training). A *lightweight* kernel
is a parameter (H, K); a *dynamic* kernel is predicted at every time step from that step's input by
a linear layer C -> H K, so it is (B, T, H, K).

The output at t is ``y[t] = sum_j w[j] x[t - P + j]`` (j = 0 .. K-1) with zeros outside the sequence:
``P = (K-1)//2`` left padding for the encoder (symmetric for odd K), ``P = K-1`` for the decoder
(causal). No loop over time: the lightweight convolution is one grouped ``F.conv1d``; the dynamic one
K shifted multiply-adds of the whole (B, T, C) input with the per-step kernels (faster on CPU than
unfolding (B, T, C, K) windows, see ``dynamic_conv``). The step functions keep the last K-1 inputs
as a window (B, K-1, C), so each decoding step costs O(K).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def encoder_padding(kernel: int) -> int:
    """Left padding of a non-causal convolution of width ``kernel`` (K//2 each side for odd K)."""
    return (kernel - 1) // 2


def lightweight_conv(x: Tensor, weight: Tensor, padding_l: int) -> Tensor:
    """x (B, T, C), weight (H, K) already normalised -> y (B, T, C), one grouped conv1d."""
    c = x.shape[2]
    h, k = weight.shape
    w = weight.repeat_interleave(c // h, dim=0).unsqueeze(1).to(x.dtype)  # (C, 1, K)
    xp = F.pad(x.transpose(1, 2), (padding_l, k - 1 - padding_l))  # (B, C, T + K - 1)
    return F.conv1d(xp, w, groups=c).transpose(1, 2)


def dynamic_conv(x: Tensor, weight: Tensor, padding_l: int) -> Tensor:
    """x (B, T, C), per-step kernels weight (B, T, H, K) -> y (B, T, C).

    A sum over the K taps, each one multiply-add over all of (B, T, C) at once (no loop over time):
    ``y += w[..., j] * x[t - P + j]``. On the CPU this is about twice as fast as unfolding the windows
    (B, T, C, K) first (forward + backward), and no (B, T, C, K) tensor is stored for backward.
    """
    b, t, c = x.shape
    h, k = weight.shape[2:]
    xp = F.pad(x, (0, 0, padding_l, k - 1 - padding_l)).view(b, t + k - 1, h, c // h)  # (B, T + K - 1, H, R)
    w = weight.to(x.dtype).unsqueeze(-1)  # (B, T, H, K, 1)
    y = xp[:, :t] * w[:, :, :, 0]
    for j in range(1, k):  # over the kernel's taps, never over time
        y = y + xp[:, j : j + t] * w[:, :, :, j]
    return y.reshape(b, t, c)


def window_step(window: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """window (B, K-1, C) of the previous inputs, x (B, C) -> (the K inputs (B, K, C), next window)."""
    full = torch.cat([window, x.unsqueeze(1)], dim=1)
    return full, full[:, 1:]


def conv_step(full: Tensor, weight: Tensor) -> Tensor:
    """The causal output at the newest position: full (B, K, C) inputs, oldest first, and weight
    (H, K) (lightweight) or (B, H, K) (dynamic) -> (B, C)."""
    b, k, c = full.shape
    h = weight.shape[-2]
    w = weight.expand(b, h, k) if weight.dim() == 2 else weight
    y = torch.einsum("bkhr,bhk->bhr", full.view(b, k, h, c // h), w.to(full.dtype))
    return y.reshape(b, c)


class TimeConv(nn.Module):
    """A lightweight (``dynamic=False``) or dynamic convolution of C channels, H heads, width K.

    ``forward(x, padding_l)`` convolves a whole sequence x (B, T, C); ``step(x, window)`` one causal
    position x (B, C) given the window (B, K-1, C) of the previous inputs.
    """

    def __init__(self, channels: int, heads: int, kernel: int, weight_dropout: float, dynamic: bool) -> None:
        super().__init__()
        if channels % heads:
            raise ValueError(f"channels={channels} must be divisible by heads={heads}")
        self.channels, self.heads, self.kernel = channels, heads, kernel
        self.weight_dropout = weight_dropout
        self.dynamic = dynamic
        if dynamic:
            self.weight_linear = nn.Linear(channels, heads * kernel, bias=False)
            nn.init.xavier_uniform_(self.weight_linear.weight)
        else:
            self.weight = nn.Parameter(torch.empty(heads, kernel))
            nn.init.xavier_uniform_(self.weight)

    def kernels(self, x: Tensor) -> Tensor:
        """Normalised (+ DropConnect) kernels: (H, K) lightweight, (..., H, K) from x (..., C) dynamic."""
        raw = self.weight_linear(x).unflatten(-1, (self.heads, self.kernel)) if self.dynamic else self.weight
        w = torch.softmax(raw.float(), dim=-1)
        return F.dropout(w, self.weight_dropout, training=self.training)

    def forward(self, x: Tensor, padding_l: int) -> Tensor:
        """x (B, T, C) -> (B, T, C); positions outside the sequence count as zeros."""
        w = self.kernels(x)
        return dynamic_conv(x, w, padding_l) if self.dynamic else lightweight_conv(x, w, padding_l)

    def initial_window(self, x: Tensor) -> Tensor:
        """The empty causal window (B, K-1, C) for a batch like x (B, C): zeros."""
        return x.new_zeros((x.shape[0], self.kernel - 1, self.channels))

    def step(self, x: Tensor, window: Tensor) -> tuple[Tensor, Tensor]:
        """x (B, C), window (B, K-1, C) -> (causal output (B, C), next window (B, K-1, C))."""
        full, window = window_step(window, x)
        return conv_step(full, self.kernels(x)), window
