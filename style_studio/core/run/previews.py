"""The pictures a run shows: its result at the requested size, previews, and the style map."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import Tensor

from ..io.imageio import fit_size
from ..io.tensors import resized_tensor, tensor_to_uint8
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


class RunPictures:
    """What a run shows of a picture: its result at the requested size, its previews and the style map with them.

    Args:
        content: the photo (its chroma goes into every result and preview when ``preserve_colors``).
        size: the requested (width, height).
        max_side: the longest side of a preview.
    """

    def __init__(self, content: Image.Image, size: tuple[int, int], preserve_colors: bool, max_side: int) -> None:
        self.content, self.size, self.preserve_colors, self.max_side = content, size, preserve_colors, max_side
        #: The last evaluation's style map, (h, w), shown with the next preview; None: none asked for.
        self.style_map: Tensor | None = None
        #: A run from a look: the look's strokes at the run's size (1, 3, H, W), laid over a preview of a smaller
        #: scale (``color.composed``) so that an early scale is seen painted, not blurred; None: no look.
        self.look: Tensor | None = None
        self._chroma: Tensor | None = None

    def result(self, image: Tensor) -> Tensor:
        """``image`` as the run's result: at the requested size, in RGB."""
        return final_picture(image, self.size, self._chroma_of(image.device))

    def preview(self, image: Tensor) -> np.ndarray:
        """``image`` as a preview; at a scale smaller than the run's, with the look's strokes over it (``look``)."""
        look = self.look
        if look is not None and image.shape[1] == look.shape[1] and image.shape[-1] < look.shape[-1]:
            height, width = look.shape[-2:]
            w, h = fit_size(width, height, self.max_side) if max(width, height) > self.max_side else (width, height)
            masses = F.interpolate(image, size=(h, w), mode="bicubic", align_corners=False).clamp(0, 1)
            strokes = F.interpolate(look, size=(h, w), mode="bilinear", antialias=True, align_corners=False)
            image = color.composed(strokes, masses)
        return preview_picture(image, self.max_side, self._chroma_of(image.device))

    def with_style_map(self, image: Tensor) -> tuple[np.ndarray, np.ndarray | None]:
        """A preview of ``image`` and the style map at its size (None when there is none)."""
        preview = self.preview(image)
        shape = preview.shape[:2]
        return preview, None if self.style_map is None else style_map_picture(self.style_map, (shape[0], shape[1]))

    def forget(self) -> None:
        """Let go of what is kept on the device (the device ran out of memory)."""
        self._chroma = None

    def _chroma_of(self, device: torch.device) -> Tensor | None:
        """The photo at the requested size, resized once: the chroma of every preview and result."""
        if not self.preserve_colors:
            return None
        if self._chroma is None:
            self._chroma = resized_tensor(self.content, self.size).to(device)
        return self._chroma
