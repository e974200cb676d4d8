"""Square roots of symmetric positive semi-definite matrices: covariances of features."""

from __future__ import annotations

import torch
from torch import Tensor


def symmetric(matrix: Tensor) -> Tensor:
    """(M + Mᵀ) / 2: what rounding left of a symmetric matrix, made symmetric again."""
    return (matrix + matrix.t()) / 2


def sqrtm(matrix: Tensor) -> Tensor:
    """The square root of a symmetric positive semi-definite (C, C) matrix, in its dtype (negative eigenvalues as 0)."""
    values, vectors = torch.linalg.eigh(symmetric(matrix))
    root: Tensor = (vectors * values.clamp_min(0).sqrt()) @ vectors.t()
    return root
