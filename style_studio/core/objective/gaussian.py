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

The matrix square root is taken from a symmetric eigendecomposition, in
float64 whatever the run's precision (``GaussianLoss``); the gradient of the
trace term needs no square root's backward: d tr(M^½) = ½ tr(M^-½ dM).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch import Tensor

from .matrices import sqrtm, symmetric
from .statistics import Statistic, Values
from .terms import StyleLoss

#: Added to each covariance, times the style's mean variance at the layer: keeps the square roots' gradients
#: finite where the features have fewer dimensions than channels (CK adds 1e-4 whatever the features' scale).
EPS = 1e-4


class Moments(Statistic):
    """(E[f], E[f·fᵀ]): the features' mean (C,) and second raw moment (C, C), in float32.

    The second moment is always multiplied in float32: the covariance is it
    less the mean's outer product, and bfloat16's three digits would not survive that difference.
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
        total = into.float() if into is not None else flat.new_zeros(flat.shape, dtype=torch.float32)
        if moment_grad is not None:
            total = torch.addmm(total, flat.float(), (moment_grad + moment_grad.t()) * scales[1])
        if mean_grad is not None:
            total = total + (mean_grad * scales[0] if mask is None else mean_grad * scales[0] * mask.float())
        return total.to(into.dtype if into is not None else flat.dtype)


class _TraceSqrt(torch.autograd.Function):
    """tr(M^½) of a symmetric positive semi-definite M; its gradient ½ M^-½.

    Eigenvalues below ``floor`` (a share of the largest) count as 0, and so does their gradient.
    """

    @staticmethod
    def forward(ctx: Any, matrix: Tensor, floor: float) -> Tensor:
        values, vectors = torch.linalg.eigh(symmetric(matrix))
        kept = values > floor * values.abs().max()
        roots = torch.where(kept, values.clamp_min(0).sqrt(), 0)
        ctx.save_for_backward(vectors, torch.where(kept, 1 / roots, 0))
        return roots.sum()

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        vectors, inverse_roots = ctx.saved_tensors
        gradient: Tensor = (vectors * inverse_roots) @ vectors.t() * (grad / 2)
        return gradient, None


def trace_sqrt(matrix: Tensor, floor: float = 1e-14) -> Tensor:
    """tr(M^½) of a symmetric positive semi-definite (C, C) matrix, a scalar in its dtype, differentiable.

    ``floor``: eigenvalues below this share of the largest count as 0.
    """
    with torch.autocast(device_type=matrix.device.type, enabled=False):
        value: Tensor = _TraceSqrt.apply(matrix, floor)
    return value


class GaussianLoss(StyleLoss):
    """W2² between the picture's and the style's Gaussians at a layer, per channel (the traces over C).

    The distance is computed in float64: the covariances of deep layers are
    far from full rank, and the product Σₜ^½ Σ Σₜ^½ spans the square of their
    range, beyond float32's seven digits (its gradient was wrong by orders of
    magnitude in float32 with trained weights).
    """

    statistic: ClassVar[Statistic] = Moments()

    def prepare(self, target: Values) -> Values:
        """(μₜ, Σₜ^½, tr Σₜ, ε): the style's side, computed once per target, in float64."""
        mean, moment = target[0].reshape(-1).double(), target[1].reshape(target[1].shape[-2:]).double()
        bare = moment - torch.outer(mean, mean)
        eps = EPS * (bare.diagonal().sum() / mean.shape[0]).clamp_min(1e-12)
        covariance = bare + eps * torch.eye(mean.shape[0], dtype=torch.float64, device=mean.device)
        return mean, sqrtm(covariance), covariance.diagonal().sum(), eps

    def distance(self, value: Values, target: Values) -> Tensor:
        mean, moment = value[0].reshape(-1).double(), value[1].reshape(value[1].shape[-2:]).double()
        target_mean, target_root, target_trace, eps = target
        eye = torch.eye(mean.shape[0], dtype=torch.float64, device=mean.device)
        covariance = moment - torch.outer(mean, mean) + eps * eye
        cross = trace_sqrt(target_root @ covariance @ target_root)
        channels = mean.shape[0]
        colour = (mean - target_mean).square().mean()
        texture = (target_trace + covariance.diagonal().sum() - 2 * cross) / channels
        return (colour + texture).float()

    def magnitude(self, target: Values) -> Tensor:
        """The distance from a picture whose features are 0: about E|f|² / C of the style's."""
        target_mean, _, target_trace, _ = target
        return (target_mean.square().mean() + target_trace / target_mean.shape[0]).float().clamp_min(1e-12)
