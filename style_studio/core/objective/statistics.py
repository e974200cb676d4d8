"""Additive statistics of a layer's features: what a style term compares, and the taps that take them.

A statistic is a sum over the feature map's positions of some function of
each position's features, divided by a count. That one shape is what lets a
statistic work everywhere the losses go: a picture's can be added up from its
tiles' shares (``tiles``), a region's is taken from the features weighted by
its mask (the guided tap below), and its gradient at one position depends
only on that position's features and the gradient with respect to the
statistic (``Statistic.backward``), so a tile can be sent back on its own.

The Gram matrix (Gatys et al. 2016) is one; the mean with the second raw
moment (for a Gaussian's Wasserstein distance) would be another.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from .guided import LayerMask

#: Statistics of one picture at one layer: each (B, ...) float32, in ``Statistic.sums``' order.
Values = tuple[Tensor, ...]

_EPS = 1e-12


class Statistic(ABC):
    """Σ over positions of a function of their features, each sum divided by its own count."""

    @abstractmethod
    def sums(self, flat: Tensor, mask: Tensor | None = None) -> Values:
        """The sums over the rows of ``flat`` (N, C): each float32 (bf16 rows may be multiplied as they are).

        In a region, each row is already multiplied by its position's mask value, ``mask`` (N, 1): a statistic
        linear in the features (a mean) weighs it once more, so that every part of it weighs positions by m²,
        as a second moment of the weighted features does, and divides by Σm² (``divisors``).
        """

    @abstractmethod
    def divisors(self, positions: float, channels: int) -> tuple[float, ...]:
        """What each sum is divided by, for a map of ``positions`` positions (Σm² in a region) and ``channels``."""

    @abstractmethod
    def backward(
        self,
        flat: Tensor,
        grads: Sequence[Tensor | None],
        scales: Sequence[float],
        into: Tensor | None,
        mask: Tensor | None = None,
    ) -> Tensor:
        """d/d``flat`` of Σ ⟨grads[i], sums(flat, mask)[i] · scales[i]⟩, (N, C) in ``flat``'s dtype, added to ``into``.

        ``grads`` are one picture's (no batch dimension); ``into`` (N, C), the
        gradient from downstream, may be None.
        """

    def normalised(self, sums: Values, positions: float, channels: int) -> Values:
        """The statistic from its sums."""
        return tuple(s / d for s, d in zip(sums, self.divisors(positions, channels), strict=True))

    def blend(self, weights: Sequence[float], values: Sequence[Values]) -> Values:
        """Several pictures' statistics as one target: their weighted sum (Gatys et al.'s style blending)."""
        return tuple(
            torch.stack([w * v[i] for w, v in zip(weights, values, strict=True)]).sum(0) for i in range(len(values[0]))
        )


class Gram(Statistic):
    """G = Fᵀ·F / (C·H·W): the features' second raw moment, over the channels as well."""

    def sums(self, flat: Tensor, mask: Tensor | None = None) -> Values:
        # 2-D mm: batched bf16 matmul copies Fᵀ to contiguous first (2-3x slower
        # on oneDNN); mm reads the transposed operand in place.
        return ((flat.t() @ flat).float(),)

    def divisors(self, positions: float, channels: int) -> tuple[float, ...]:
        return (max(positions, _EPS) * channels,)

    def backward(
        self,
        flat: Tensor,
        grads: Sequence[Tensor | None],
        scales: Sequence[float],
        into: Tensor | None,
        mask: Tensor | None = None,
    ) -> Tensor:
        (grad,), (scale,) = grads, scales
        if grad is None:
            return into if into is not None else torch.zeros_like(flat)
        symmetric = (grad + grad.t()).mul_(scale).to(flat.dtype)
        if into is None:
            return flat @ symmetric
        if into.dtype == flat.dtype:
            return torch.addmm(into, flat, symmetric)
        return into + (flat @ symmetric).to(into.dtype)


def _compute_dtype(features: Tensor) -> torch.dtype:
    """Float32 and float16 features are summed in float32 (float16 cannot hold the sums), bfloat16 ones as they are."""
    return torch.bfloat16 if features.dtype == torch.bfloat16 else torch.float32


class _StatisticTap(torch.autograd.Function):
    """Features in; the same features and their statistic out.

    A tap on the network: the features flow on unchanged and their statistic
    comes out on the side, so the backward adds the statistic's gradient to
    the downstream one in one fused multiply-add instead of autograd's
    separate products and sum (benchmarks/overhead.py measures what that saves).
    """

    @staticmethod
    def forward(ctx: Any, features: Tensor, statistic: Statistic) -> tuple[Tensor, ...]:
        b, c, h, w = features.shape
        # (B, HW, C): a free view of NHWC (channels-last) memory; NCHW is copied once.
        flat = features.to(_compute_dtype(features)).permute(0, 2, 3, 1).reshape(b, h * w, c)
        ctx.save_for_backward(flat)
        ctx.shape, ctx.statistic = features.shape, statistic
        ctx.scales = tuple(1.0 / d for d in statistic.divisors(h * w, c))
        per_picture = [statistic.sums(f) for f in flat]
        sums = zip(*per_picture, strict=True)
        values = [torch.stack(parts).float().mul_(scale) for parts, scale in zip(sums, ctx.scales, strict=True)]
        return (features.view_as(features), *values)

    @staticmethod
    def backward(ctx: Any, downstream: Tensor | None, *grads: Tensor | None) -> tuple[Tensor | None, None]:
        (flat,) = ctx.saved_tensors
        if all(g is None for g in grads):
            return downstream, None
        # (B, HW, C): a view when the gradient is channels-last, as VGG's are here.
        into = downstream.permute(0, 2, 3, 1).reshape(flat.shape) if downstream is not None else None
        total = torch.stack(
            [
                ctx.statistic.backward(
                    f,
                    [g[i] if g is not None else None for g in grads],
                    ctx.scales,
                    into[i] if into is not None else None,
                )
                for i, f in enumerate(flat)
            ]
        )
        b, c, h, w = ctx.shape
        grad: Tensor = total.reshape(b, h, w, c).permute(0, 3, 1, 2)
        return grad, None


def statistic_tap(features: Tensor, statistic: Statistic) -> tuple[Tensor, Values]:
    """(features, their statistic): to put in the network's path, see ``_StatisticTap``.

    The first output replaces ``features`` downstream, so that one fused
    backward computes the layer's whole gradient. It aliases ``features``:
    nothing may modify it in place (clone it before an in-place ReLU).
    """
    with torch.autocast(device_type=features.device.type, enabled=False):
        passed_on, *values = _StatisticTap.apply(features, statistic)
    return passed_on, tuple(values)


class _GuidedTap(torch.autograd.Function):
    """Features in; the same features and one statistic per mask out, of the features times the mask.

    A region's statistic divides by Σm² over its mask (the guided Gram matrix of
    Gatys et al. 2017: G = (F·m)ᵀ(F·m) / (C·Σm²)). As ``_StatisticTap``, the
    backward adds every group's share, m·statistic.backward(F·m), within the
    mask's bounding box, to the downstream gradient in one buffer: through
    autograd the crops, products and masks would each leave a full-size
    gradient to add up (a third more time per iteration at 512 px with three
    groups). The features are read as (h, w, C), a free view of channels-last memory.
    """

    @staticmethod
    def forward(ctx: Any, features: Tensor, statistic: Statistic, *masks: LayerMask) -> tuple[Tensor, ...]:
        channels = features.shape[1]
        dtype = _compute_dtype(features)
        plane = features[0].permute(1, 2, 0)  # (h, w, C)
        values: list[Tensor] = []
        scales = []
        for mask in masks:
            flat = _weighted(plane, mask, dtype).reshape(-1, channels)
            divisors = statistic.divisors(mask.energy, channels)
            scales.append(tuple(1.0 / d for d in divisors))
            sums = statistic.sums(flat, _mask_rows(mask, dtype))
            values.extend(s.mul_(scale).unsqueeze(0) for s, scale in zip(sums, scales[-1], strict=True))
        ctx.save_for_backward(features)
        ctx.masks, ctx.dtype, ctx.statistic, ctx.scales = masks, dtype, statistic, scales
        return (features.view_as(features), *values)

    @staticmethod
    def backward(ctx: Any, downstream: Tensor | None, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        (features,) = ctx.saved_tensors
        nothing = (None,) * (len(ctx.masks) + 1)
        if all(g is None for g in grads):
            return (downstream, *nothing)
        channels = features.shape[1]
        plane = features[0].permute(1, 2, 0)
        out = (
            downstream[0].permute(1, 2, 0).to(ctx.dtype, copy=True)
            if downstream is not None
            else plane.new_zeros(plane.shape, dtype=ctx.dtype)
        )
        count = len(grads) // len(ctx.masks)
        for number, (mask, scales) in enumerate(zip(ctx.masks, ctx.scales, strict=True)):
            mine = [g[0] if g is not None else None for g in grads[number * count : (number + 1) * count]]
            if all(g is None for g in mine):
                continue
            weighted = _weighted(plane, mask, ctx.dtype)
            rows = _mask_rows(mask, ctx.dtype)
            share = ctx.statistic.backward(weighted.reshape(-1, channels), mine, scales, None, rows)
            share = share.view(weighted.shape)
            if mask.values is not None:
                share.mul_(mask.values[0, 0, mask.rows, mask.cols, None].to(ctx.dtype))
            out[mask.rows, mask.cols] += share
        grad_features = out.to(features.dtype).permute(2, 0, 1).unsqueeze(0)
        return (grad_features, *nothing)


def _weighted(plane: Tensor, mask: LayerMask, dtype: torch.dtype) -> Tensor:
    """The (h', w', C) features within the mask's bounding box, times the mask (a new tensor)."""
    if mask.values is None:
        return plane.to(dtype, copy=True)
    values = mask.values[0, 0, mask.rows, mask.cols, None]
    return plane[mask.rows, mask.cols].to(dtype) * values.to(dtype)


def _mask_rows(mask: LayerMask, dtype: torch.dtype) -> Tensor | None:
    """The mask's values within its bounding box as (N, 1), in the order of ``_weighted``'s rows; None: all ones."""
    return None if mask.values is None else mask.values[0, 0, mask.rows, mask.cols].reshape(-1, 1).to(dtype)


def guided_tap(features: Tensor, statistic: Statistic, masks: Sequence[LayerMask]) -> tuple[Tensor, list[Values]]:
    """(features, their statistic in each mask): to put in the network's path, see ``_GuidedTap``."""
    with torch.autocast(device_type=features.device.type, enabled=False):
        passed_on, *values = _GuidedTap.apply(features, statistic, *masks)
    count = len(values) // len(masks)
    return passed_on, [tuple(values[i * count : (i + 1) * count]) for i in range(len(masks))]


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
    return statistic_tap(features, Gram())[1][0]
