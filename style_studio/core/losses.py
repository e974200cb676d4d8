"""Gram matrices and the three loss terms, each normalised to its target.

Gatys et al. (2016) weight raw squared errors, so a weight's meaning shifts
with the image size, the layer and the scale of the network's features (an
untrained VGG's activations are orders of magnitude off a trained one's). Here
each term is divided by its target's own magnitude: 0 at the target, about 1
for an unrelated image. The same weights then balance the same way at any
size, for any layer, with any weights file.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

_EPS = 1e-12


class _Gram(torch.autograd.Function):
    """G = Fᵀ·F for F: (B, N, C), with a one-matmul backward.

    Autograd's own backward of ``f.mT @ f`` computes one product per operand
    and adds them (two matmuls and an add over all of F, in a transposed,
    slow layout). Since dL/dF = F·(dG + dGᵀ), one matmul suffices: at 256 px
    this cut the time spent on Gram matrices by half (benchmarks/overhead.py).
    """

    @staticmethod
    def forward(ctx: Any, flat: Tensor) -> Tensor:
        ctx.save_for_backward(flat)
        # 2-D mm per image: batched bf16 matmul copies Fᵀ to contiguous first
        # (2-3x slower on oneDNN); mm reads the transposed operand in place.
        return torch.stack([f.t() @ f for f in flat])

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        (flat,) = ctx.saved_tensors
        return flat @ (grad + grad.mT)


def gram(features: Tensor) -> Tensor:
    """Gram matrix G = F·Fᵀ / (C·H·W), returned in float32, even under autocast.

    Float32 and float16 features are multiplied in float32: float16's range
    cannot hold the sums. Features that are already bfloat16 (VGG under bf16
    autocast) are multiplied as they are, with float32 accumulation (oneDNN
    and cuBLAS accumulate bf16 products in fp32), and the result is rounded
    to bf16 once before it returns as float32. That departs from an all-fp32
    Gram by about 0.4 % per entry and costs half the time; at 256 px an fp32
    Gram alone added 30 % to each iteration (benchmarks/overhead.py). Final
    losses stay within 1 % of an fp32 run (benchmarks/precision.py).

    Args:
        features: (B, C, H, W), any dtype or memory format.

    Returns:
        (B, C, C) float32.
    """
    b, c, h, w = features.shape
    with torch.autocast(device_type=features.device.type, enabled=False):
        dtype = torch.bfloat16 if features.dtype == torch.bfloat16 else torch.float32
        # (B, HW, C): a free view of NHWC (channels-last) memory; NCHW is copied once.
        flat = features.to(dtype).permute(0, 2, 3, 1).reshape(b, h * w, c)
        return _Gram.apply(flat).float() / (c * h * w)


def magnitude(target: Tensor) -> Tensor:
    """Mean square of a target, the denominator of its relative loss (scalar, float32)."""
    return target.float().square().mean().clamp_min(_EPS)


def relative_mse(value: Tensor, target: Tensor, target_magnitude: Tensor) -> Tensor:
    """mean((value - target)²) / mean(target²), in float32 (a scalar).

    ``mse_loss`` runs forward and backward as one fused pass each; spelled out
    as sub, square and mean, the content loss at relu4_2 alone took 2.5 ms of
    each 256 px iteration (benchmarks/overhead.py).
    """
    with torch.autocast(device_type=value.device.type, enabled=False):
        return F.mse_loss(value.float(), target) / target_magnitude


def total_variation(image: Tensor) -> Tensor:
    """Mean squared difference of neighbouring pixels.

    Args:
        image: (B, C, H, W) in [0, 1].

    Returns:
        scalar float32; independent of the image size for a given smoothness.
    """
    dy = image[:, :, 1:, :] - image[:, :, :-1, :]
    dx = image[:, :, :, 1:] - image[:, :, :, :-1]
    return dy.square().mean() + dx.square().mean()
