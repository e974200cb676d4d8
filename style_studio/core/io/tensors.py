"""Pictures between PIL and torch: (1, C, H, W) float tensors in [0, 1]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import Tensor


def pil_to_tensor(image: Image.Image) -> Tensor:
    """PIL RGB -> (1, 3, H, W) float32 in [0, 1]."""
    array = np.array(image.convert("RGB"), dtype=np.uint8)
    return torch.from_numpy(array).permute(2, 0, 1).unsqueeze(0).float().div_(255).contiguous()


def resized_tensor(image: Image.Image, size: tuple[int, int]) -> Tensor:
    """``image`` at (width, height), Lanczos-resampled, as (1, 3, H, W) float32."""
    if image.size != size:
        image = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
    return pil_to_tensor(image)


def tensor_to_uint8(image: Tensor) -> np.ndarray:
    """(1, 3, H, W) float -> (H, W, 3) uint8, clamped."""
    array = image.detach()[0].clamp(0, 1).mul(255).round_().to(torch.uint8).permute(1, 2, 0)
    return array.cpu().numpy()


def tensor_to_pil(image: Tensor) -> Image.Image:
    """(1, 3, H, W) float -> PIL RGB, clamped."""
    return Image.fromarray(tensor_to_uint8(image))


def read_tensors(path: Path, what: str) -> Any:
    """What a file of tensors Style Studio kept holds (``torch.load``, tensors only, onto the CPU).

    Raises:
        ValueError: it cannot be read; the message names ``what`` and torch's reason in a few words, never torch's
            advice to load it unsafely (a kept file is never run as code).
    """
    import io

    try:
        return torch.load(io.BytesIO(path.read_bytes()), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a truncated or foreign file
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        reason = first.split(". ")[0].rstrip(".")[:120]
        raise ValueError(f"{what} cannot be read ({reason})") from None
