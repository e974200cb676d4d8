"""The pictures at one scale, as the loss's terms take them, and the style images' statistics a clip keeps."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import torch
from PIL import Image
from torch import Tensor

from ..io.imageio import fit_size
from ..io.tensors import resized_tensor
from ..settings import Settings
from . import color
from .guided import WHOLE_PICTURE, ScaleRegions
from .regions import Regions
from .statistics import Values
from .temporal import TemporalTarget

#: The style images' statistics, by style layer, one mapping per style image.
StyleStatistics = list[dict[str, Values]]


class StyleCache:
    """The style images' statistics by layers and sizes: computed once for all the frames of a clip."""

    def __init__(self) -> None:
        self._known: dict[Hashable, StyleStatistics] = {}

    def get(self, key: Hashable, compute: Callable[[], StyleStatistics]) -> StyleStatistics:
        if key not in self._known:
            self._known[key] = compute()
        return self._known[key]

    def __len__(self) -> int:
        return len(self._known)


@dataclass(frozen=True)
class ScaleInputs:
    """The pictures at one scale, on the compute device.

    Attributes:
        content: (1, C, H, W), in the optimised image's format: RGB (C = 3),
            or luminance (C = 1) when preserving colours.
        styles: (1, 3, h, w) each, as the network sees them: luminance
            repeated over RGB (and matched to the content's) when preserving colours.
        regions: the painted regions at this size (one group over the whole picture when none).
        temporal: in a video's frame, the previous stylised frame warped to this one (``temporal``); else None.
        known_styles: the style images' statistics, kept between the runs of a clip's frames; None: computed.
    """

    content: Tensor
    styles: tuple[Tensor, ...]
    regions: ScaleRegions = field(default_factory=lambda: ScaleRegions(WHOLE_PICTURE, None))
    temporal: TemporalTarget | None = None
    known_styles: StyleCache | None = None

    @classmethod
    def prepare(
        cls,
        content: Image.Image,
        styles: tuple[Image.Image, ...],
        size: tuple[int, int],
        settings: Settings,
        device: torch.device,
        regions: Regions | None = None,
    ) -> ScaleInputs:
        """Resize the pictures (and the regions' masks) for an output of ``size`` (width, height)."""
        content_rgb = resized_tensor(content, size).to(device)
        longest = settings.style_side(max(size))
        prepared = []
        for style in styles:
            tensor = resized_tensor(style, fit_size(style.width, style.height, longest)).to(device)
            if settings.preserve_colors:
                # Gatys et al. 2017, luminance-only transfer with the style's luminance histogram matched.
                y = color.match_luminance(color.luminance(tensor), color.luminance(content_rgb))
                tensor = y.expand(-1, 3, -1, -1)
            prepared.append(tensor)
        if settings.preserve_colors:
            content_rgb = color.luminance(content_rgb)
        return cls(content_rgb, tuple(prepared), ScaleRegions.prepare(regions, size, device))

    @property
    def size(self) -> tuple[int, int]:
        """(width, height)."""
        return self.content.shape[-1], self.content.shape[-2]
