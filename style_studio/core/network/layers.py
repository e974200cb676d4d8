"""VGG19 layer names: the one place that maps torchvision indices to names.

torchvision's ``vgg19().features`` is a flat ``nn.Sequential`` of 37 modules.
Everything else in Style Studio (hooks, sliders, settings, presets, exported
metadata) speaks in the names defined here: ``conv1_1`` ... ``conv5_4``,
``relu1_1`` ... ``relu5_4`` and ``pool1`` ... ``pool5``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final

from ..errors import StyleStudioError
from ..io.imageio import fit_size

if TYPE_CHECKING:
    from PIL import Image

# Convolutions per block in VGG19 (torchvision's configuration "E").
_CONVS_PER_BLOCK: Final = (2, 2, 4, 4, 4)
#: Channels of each block's convolutions in VGG19.
BLOCK_WIDTHS: Final = (64, 128, 256, 512, 512)


def vgg19_config(widths: Sequence[int] = BLOCK_WIDTHS) -> list[int | str]:
    """VGG19's layout in torchvision's ``cfgs`` form (channels per convolution, "M" per pool).

    ``widths``: channels of each of the five blocks; narrower ones make a network
    with VGG19's layers and names at a fraction of its cost.
    """
    config: list[int | str] = []
    for width, convs in zip(widths, _CONVS_PER_BLOCK, strict=True):
        config += [width] * convs + ["M"]
    return config


def _build_names() -> tuple[str, ...]:
    names: list[str] = []
    for block, convs in enumerate(_CONVS_PER_BLOCK, start=1):
        for conv in range(1, convs + 1):
            names += [f"conv{block}_{conv}", f"relu{block}_{conv}"]
        names.append(f"pool{block}")
    return tuple(names)


#: Layer names in the order of ``torchvision.models.vgg19().features``.
LAYER_NAMES: Final[tuple[str, ...]] = _build_names()

#: Name -> index into ``features``.
LAYER_INDEX: Final[dict[str, int]] = {name: i for i, name in enumerate(LAYER_NAMES)}

#: The layers the window shows a style slider for by default.
PRIMARY_STYLE_LAYERS: Final[tuple[str, ...]] = ("relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1")


def layer_index(name: str) -> int:
    """Index of a named layer in VGG19's ``features``.

    Raises:
        KeyError: with a message listing the valid names when ``name`` is unknown.
    """
    try:
        return LAYER_INDEX[name]
    except KeyError:
        raise KeyError(
            f"unknown VGG19 layer {name!r}; valid names are conv1_1 ... conv5_4, "
            "relu1_1 ... relu5_4 and pool1 ... pool5"
        ) from None


def is_layer(name: str) -> bool:
    return name in LAYER_INDEX


def channels(name: str) -> int:
    """Number of feature channels a layer outputs (64, 128, 256 or 512)."""
    layer_index(name)  # validates
    block = int(name[4])  # "conv3_2", "relu3_2" and "pool3" all carry the block at [4]
    return (64, 128, 256, 512, 512)[block - 1]


def deepest(names: Iterable[str]) -> int:
    """Index of the deepest layer among ``names`` (the truncation point)."""
    return max(layer_index(n) for n in names)


#: Pixels of the picture mirrored around it before VGG's first block, whose
#: two convolutions then run unpadded (see ``features.VGG19``): 2, one per
#: convolution.
MIRRORED_BORDER = 2


def min_input_side(names: Iterable[str]) -> int:
    """Smallest image side from which VGG can compute all ``names``.

    2 ** (pools before the deepest), and more than the mirrored border
    (mirroring needs a picture wider than the border).
    """
    pools = sum(1 for name in LAYER_NAMES[: deepest(names)] if name.startswith("pool"))
    return max(MIRRORED_BORDER + 1, 1 << pools)


def check_image_fits(image: Image.Image, longest: int, layers: Sequence[str], what: str) -> None:
    """Raise a clear error when ``image`` scaled to ``longest`` is too thin for the network.

    VGG halves the image at each pool; the deepest layer in use must still
    see at least one pixel.
    """
    need = min_input_side(layers)
    width, height = fit_size(image.width, image.height, longest)
    if min(width, height) < need:
        raise StyleStudioError(
            f"{what} ({image.width}×{image.height}) would be {width}×{height} pixels at size {longest}; "
            f"at least {need} pixels are needed on each side. Use a larger size or a less elongated image"
        )


def receptive_field(name: str) -> int:
    """How many pixels across of the network's input one value of layer ``name`` sees: the size of the patterns it
    carries (relu1_1: 3, a colour and the finest grain; relu5_1: 156, strokes and shapes).

    VGG19's 3×3 convolutions each widen it by two steps, its 2×2 pools by one, and each pool doubles the step.
    """
    field, step = 1, 1
    for layer in LAYER_NAMES[: layer_index(name) + 1]:
        if layer.startswith("conv"):
            field += 2 * step
        elif layer.startswith("pool"):
            field += step
            step *= 2
    return field


def style_patch(style: Image.Image, name: str, style_side: int) -> Image.Image:
    """The middle of ``style`` as much of it as one value of layer ``name`` sees when the run sizes the style to
    ``style_side`` on its longest side (what that layer's slider carries), in the style's own pixels."""
    scale = max(style.width, style.height) / style_side
    side = max(1, min(round(receptive_field(name) * scale), style.width, style.height))
    left, top = (style.width - side) // 2, (style.height - side) // 2
    return style.crop((left, top, left + side, top + side))
