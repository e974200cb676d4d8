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


class _GramTap(torch.autograd.Function):
    """Features in; the same features and G = Fᵀ·F / (C·H·W) in float32 out.

    A tap on the network: the features flow on unchanged and their Gram
    matrix comes out on the side, so the backward can return the downstream
    gradient plus the Gram's, F·(dG + dGᵀ) / (C·H·W), as one fused
    multiply-add instead of autograd's two products and a separate sum
    (benchmarks/overhead.py measures what that saves).
    """

    @staticmethod
    def forward(ctx: Any, features: Tensor) -> tuple[Tensor, Tensor]:
        b, c, h, w = features.shape
        # Float32 and float16 features are multiplied in float32 (float16
        # cannot hold the sums); bfloat16 ones as they are.
        dtype = torch.bfloat16 if features.dtype == torch.bfloat16 else torch.float32
        # (B, HW, C): a free view of NHWC (channels-last) memory; NCHW is copied once.
        flat = features.to(dtype).permute(0, 2, 3, 1).reshape(b, h * w, c)
        ctx.save_for_backward(flat)
        ctx.shape = features.shape
        ctx.scale = 1.0 / (c * h * w)
        # 2-D mm per image: batched bf16 matmul copies Fᵀ to contiguous first
        # (2-3x slower on oneDNN); mm reads the transposed operand in place.
        gram = torch.stack([f.t() @ f for f in flat]).float().mul_(ctx.scale)
        return features.view_as(features), gram

    @staticmethod
    def backward(ctx: Any, downstream: Tensor | None, grad_gram: Tensor | None) -> Tensor | None:
        (flat,) = ctx.saved_tensors
        if grad_gram is None:
            return downstream
        symmetric = (grad_gram + grad_gram.mT).mul_(ctx.scale).to(flat.dtype)
        if downstream is None:
            total = flat @ symmetric
        else:
            # (B, HW, C): a view when the gradient is channels-last, as VGG's are here.
            downstream_flat = downstream.permute(0, 2, 3, 1).reshape(flat.shape)
            if downstream_flat.dtype == flat.dtype:
                total = torch.baddbmm(downstream_flat, flat, symmetric)
            else:
                total = downstream_flat + (flat @ symmetric).to(downstream_flat.dtype)
        b, c, h, w = ctx.shape
        grad: Tensor = total.reshape(b, h, w, c).permute(0, 3, 1, 2)
        return grad


def gram_tap(features: Tensor) -> tuple[Tensor, Tensor]:
    """(features, their Gram matrix): to put in the network's path, see ``_GramTap``.

    The first output replaces ``features`` downstream, so that one fused
    backward computes the layer's whole gradient. It aliases ``features``:
    nothing may modify it in place (clone it before an in-place ReLU).
    """
    with torch.autocast(device_type=features.device.type, enabled=False):
        passed_on, gram = _GramTap.apply(features)
    return passed_on, gram


def gram(features: Tensor) -> Tensor:
    """Gram matrix G = F·Fᵀ / (C·H·W), returned in float32, even under autocast.

    Float32 and float16 features are multiplied in float32: float16's range
    cannot hold the sums. Features that are already bfloat16 (the network
    under bf16 autocast) are multiplied as they are, accumulated in float32
    and rounded to bf16 once: half the time of an fp32 Gram, within the
    precision benchmark's bound on final losses (benchmarks/precision.py).

    Args:
        features: (B, C, H, W), any dtype or memory format.

    Returns:
        (B, C, C) float32.
    """
    return gram_tap(features)[1]


def magnitude(target: Tensor) -> Tensor:
    """Mean square of a target, the denominator of its relative loss (scalar, float32)."""
    return target.float().square().mean().clamp_min(_EPS)


def weighted_mse(value: Tensor, target: Tensor, factor: Tensor | float) -> Tensor:
    """factor · mean((value - target)²), in float32 (a scalar).

    With ``factor = weight / magnitude(target)`` this is a weighted relative
    loss; the factor is computed when the weights change, so each term costs
    one fused ``mse_loss`` pass each way and one multiplication.
    """
    with torch.autocast(device_type=value.device.type, enabled=False):
        return F.mse_loss(value.float(), target) * factor


def total_variation(image: Tensor) -> Tensor:
    """Mean squared difference of neighbouring pixels.

    Args:
        image: (B, C, H, W) in [0, 1].

    Returns:
        scalar float32; independent of the image size for a given smoothness.
    """
    # Two fused passes, where sub, square and mean would be three each way.
    vertical = F.mse_loss(image[:, :, 1:, :], image[:, :, :-1, :])
    horizontal = F.mse_loss(image[:, :, :, 1:], image[:, :, :, :-1])
    return vertical + horizontal
