"""The style as a Gaussian: the Wasserstein-2 distance between Gaussians fitted to the features.

Each style layer's features are summarised by their mean μ and covariance Σ,
and the distance between two such Gaussians is

    W2² = |μ - μₜ|² + tr(Σ) + tr(Σₜ) - 2·tr((Σₜ^½ Σ Σₜ^½)^½)

(the style loss of crowsonkb/style-transfer-pytorch, after Kolkin et al.
2019 and Mroueh 2019). Where the Gram matrix mixes the features' mean into
their second moment, W2 matches the palette (the mean) and the texture (the
covariance) apart, which is what gives the painting's colours rather than
the photo's. Several styles blend by their means and second raw moments, as
CK does; both are sums over positions, so tiles and regions work unchanged
(``statistics``).

The cross term's square root is taken from a symmetric eigendecomposition,
in float64 whatever the run's precision, over the style's principal
directions only (``GaussianLoss``), and the distance's gradient is found in the
same pass, without an autograd graph of float64 matrices: d tr(M^½) =
½ tr(M^-½ dM) needs no square root's backward (``_Distance``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch import Tensor

from .matrices import symmetric
from .statistics import Statistic, Values
from .terms import StyleLoss

#: Added to each covariance, times the style's mean variance at the layer: keeps the square roots' gradients
#: finite where the features have fewer dimensions than channels (CK adds 1e-4 whatever the features' scale).
EPS = 1e-4
#: Eigenvalues of Fᵀ Σ F below this share of the largest count as 0, and so does their gradient.
FLOOR = 1e-14
#: The share of the style's variance at a layer whose directions the cross term reads (``GaussianLoss``).
STYLE_SHARE = 0.99


class Moments(Statistic):
    """(E[f], E[f·fᵀ]): the features' mean (C,) and second raw moment (C, C), in float32.

    The second moment is always multiplied in float32: the covariance is it
    less the mean's outer product, and bfloat16's three digits would not survive that difference.
    Its gradient goes back in the features' own dtype, as the Gram matrix's does.
    """

    def sums(self, flat: Tensor, mask: Tensor | None = None) -> Values:
        flat = flat.float()
        return (flat if mask is None else flat * mask.float()).sum(0), flat.t() @ flat

    def divisors(self, positions: float, channels: int) -> tuple[float, ...]:
        count = max(positions, 1e-12)
        return count, count

    def backward(
        self,
        flat: Tensor,
        grads: Sequence[Tensor | None],
        scales: Sequence[float],
        into: Tensor | None,
        mask: Tensor | None = None,
    ) -> Tensor:
        mean_grad, moment_grad = grads
        total = into if into is not None else torch.zeros_like(flat)
        if moment_grad is not None:
            symmetric = ((moment_grad + moment_grad.t()) * scales[1]).to(flat.dtype)
            total = torch.addmm(total, flat, symmetric) if total.dtype == flat.dtype else total + flat @ symmetric
        if mean_grad is not None:
            shift = (mean_grad * scales[0]).to(total.dtype)
            total = total + (shift if mask is None else shift * mask.to(total.dtype))
        return total


class _Distance(torch.autograd.Function):
    """W2² per channel from the picture's mean and second moment, its gradient with respect to both found in the
    same pass, in float64 (see ``GaussianLoss``).

    With Σ = E[ffᵀ] - μμᵀ + εI, M = Fᵀ Σ F = V diag(λ) Vᵀ and B = F V diag(λ^-½): the cross term is Σ λ^½,
    d tr(M^½) = ½ tr(M^-½ dM), so dW2²/dΣ = (I - B Bᵀ) / C, dW2²/dE[ffᵀ] is that and dW2²/dμ is
    2(μ - μₜ)/C - 2 dW2²/dΣ μ. Eigenvalues of M below ``floor`` (a share of the largest) count as 0, and so
    does their gradient.
    """

    @staticmethod
    def forward(ctx: Any, mean: Tensor, moment: Tensor, target: Values, floor: float) -> Tensor:
        target_mean, factor, spread, target_trace, eps = target
        channels = mean.shape[-1]
        mu, second = mean.reshape(-1).double(), moment.reshape(channels, channels).double()
        projected_mean = factor.t() @ mu
        inner = symmetric(factor.t() @ second @ factor) - torch.outer(projected_mean, projected_mean)
        inner.diagonal().add_(eps * spread)  # Fᵀ(εI)F = ε diag(λₜ)
        try:
            values, vectors = torch.linalg.eigh(inner)
        except torch.linalg.LinAlgError:  # type: ignore[attr-defined]
            # A picture gone non-finite: its loss is not finite either, and step control goes back.
            ctx.save_for_backward(torch.zeros_like(mean), torch.zeros_like(moment))
            ctx.moment_shape = moment.shape
            return torch.full((), math.nan, dtype=torch.promote_types(mean.dtype, torch.float32), device=mean.device)
        kept = values > floor * values.abs().max()
        roots = torch.where(kept, values.clamp_min(0).sqrt(), 0)
        trace = second.diagonal().sum() - mu @ mu + eps * channels
        colour = (mu - target_mean).square().sum()
        value = (colour + target_trace + trace - 2 * roots.sum()) / channels
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            scaled = (factor @ vectors) * torch.where(kept, roots.reciprocal(), 0).sqrt()
            by_covariance = scaled @ scaled.t() / -channels
            by_covariance.diagonal().add_(1 / channels)
            by_mean = (mu - target_mean) * (2 / channels) - 2 * by_covariance @ mu
            ctx.save_for_backward(by_mean.to(mean.dtype).reshape(mean.shape), by_covariance.to(moment.dtype))
            ctx.moment_shape = moment.shape
        return value.to(torch.promote_types(mean.dtype, torch.float32))

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, Tensor, None, None]:
        by_mean, by_moment = ctx.saved_tensors
        return by_mean * grad, (by_moment * grad).reshape(ctx.moment_shape), None, None


def principal_factor(covariance: Tensor, share: float) -> Tensor:
    """U diag(λ)^½ over the fewest principal directions of ``covariance`` (C, C) that hold ``share`` of its
    variance (all of them at 1): F Fᵀ is the covariance within them, (C, k)."""
    ascending, vectors = torch.linalg.eigh(symmetric(covariance))
    values: Tensor = ascending.flip(0).clamp_min(0)
    factor: Tensor = vectors.flip(1) * values.sqrt()
    if share >= 1:
        return factor
    held = values.cumsum(0) / values.sum().clamp_min(torch.finfo(values.dtype).tiny)
    return factor[:, : int((held < share).sum()) + 1]


class GaussianLoss(StyleLoss):
    """W2² between the picture's and the style's Gaussians at a layer, per channel (the traces over C).

    The cross term reads the style's covariance within its principal directions that hold ``share`` of
    its variance (``principal_factor``), so the picture's variance outside them counts only against it (by
    tr Σ): at relu4_1 and relu5_1 70 to 300 of the 512 directions hold 99 %, and the product and
    the eigendecomposition each iteration shrink with them (k×k instead of C×C).

    The distance is computed in float64: the covariances of deep layers are
    far from full rank, and the product Σₜ^½ Σ Σₜ^½ spans the square of their
    range, beyond float32's seven digits (its gradient was wrong by orders of
    magnitude in float32 with trained weights).

    Args:
        share: of the style's variance at a layer, held by the directions the cross term reads (1: all).
    """

    statistic: ClassVar[Statistic] = Moments()

    def __init__(self, share: float = STYLE_SHARE) -> None:
        self.share = share

    def prepare(self, target: Values) -> Values:
        """(μₜ, F, λₜ, tr Σₜ, ε): the style's side, computed once per target, in float64; F (C, k) the style
        covariance's principal factor and λₜ its k variances (Fᵀ F = diag(λₜ))."""
        mean, moment = target[0].reshape(-1).double(), target[1].reshape(target[1].shape[-2:]).double()
        bare = moment - torch.outer(mean, mean)
        eps = EPS * (bare.diagonal().sum() / mean.shape[0]).clamp_min(1e-12)
        covariance = bare + eps * torch.eye(mean.shape[0], dtype=torch.float64, device=mean.device)
        factor = principal_factor(covariance, self.share)
        return mean, factor, factor.square().sum(0), covariance.diagonal().sum(), eps

    def distance(self, value: Values, target: Values) -> Tensor:
        with torch.autocast(device_type=value[0].device.type, enabled=False):
            distance: Tensor = _Distance.apply(value[0], value[1], target, FLOOR)
        return distance.float()

    def magnitude(self, target: Values) -> Tensor:
        """The distance from a picture whose features are 0: about E|f|² / C of the style's."""
        target_mean, _, _, target_trace, _ = target
        return (target_mean.square().mean() + target_trace / target_mean.shape[0]).float().clamp_min(1e-12)
