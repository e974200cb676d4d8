"""Square roots of symmetric positive semi-definite matrices: covariances of features and of colours."""

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


def gaussian_map(source: Tensor, target: Tensor) -> Tensor:
    """The linear map that takes a Gaussian of covariance ``source`` to one of covariance ``target`` (both (C, C),
    positive definite) at the least squared displacement: A = S^-½ (S^½ T S^½)^½ S^-½ (the Wasserstein-2 map)."""
    values, vectors = torch.linalg.eigh(symmetric(source))
    roots = values.clamp_min(torch.finfo(values.dtype).tiny).sqrt()
    root, inverse_root = (vectors * roots) @ vectors.t(), (vectors / roots) @ vectors.t()
    mapped: Tensor = inverse_root @ sqrtm(root @ target @ root) @ inverse_root
    return mapped
