"""The pictures a run shows: its result at the requested size, previews, and the style map."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..io.imageio import fit_size
from ..io.tensors import tensor_to_uint8
from ..objective import color


def final_picture(image: Tensor, size: tuple[int, int], chroma: Tensor | None) -> Tensor:
    """``image`` (1, C, H, W) at ``size`` (width, height), in RGB: with ``chroma``'s colours when C is 1."""
    width, height = size
    if image.shape[-2:] != (height, width):
        image = F.interpolate(image, size=(height, width), mode="bicubic", align_corners=False)
    return color.with_chroma(image, chroma) if chroma is not None else image


@torch.no_grad()
def preview_picture(image: Tensor, max_side: int, chroma: Tensor | None) -> np.ndarray:
    """``image`` (1, C, H, W) as an (h, w, 3) uint8 preview at most ``max_side`` on a side; ``chroma`` as above."""
    height, width = image.shape[-2:]
    if max(width, height) > max_side:
        w, h = fit_size(width, height, max_side)
        image = F.interpolate(image, size=(h, w), mode="bilinear", antialias=True, align_corners=False)
    if chroma is not None:
        content = F.interpolate(chroma, size=image.shape[-2:], mode="bilinear", antialias=True, align_corners=False)
        image = color.with_chroma(image, content)
    return tensor_to_uint8(image)


@torch.no_grad()
def style_map_picture(style_map: Tensor, size: tuple[int, int]) -> np.ndarray:
    """``style_map`` (H, W) at the preview's (height, width), scaled to [0, 1] by its largest value."""
    values = F.interpolate(style_map[None, None], size=size, mode="bilinear", align_corners=False)[0, 0]
    top = float(values.max())
    if not math.isfinite(top) or top <= 0:
        return np.zeros(size, np.float32)
    result: np.ndarray = (values / top).clamp_(0, 1).cpu().numpy().astype(np.float32)
    return result
