"""VGG19 truncated after the deepest layer a loss needs, and the hooks that read it.

``VGG19`` owns the modules; ``TruncatedVGG`` runs only the layers some loss
reads; ``capture`` registers
forward hooks on the named layers for the duration of a ``with`` block and
removes every handle when the block exits, however it exits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from .layers import LAYER_NAMES, MIRRORED_BORDER, deepest
from .losses import gram_tap

# torchvision's VGG19 was trained on RGB in [0, 1] normalised with these.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: The first block's convolutions, which see the mirrored border instead of zeros.
FIRST_BLOCK_CONVS = ("conv1_1", "conv1_2")


class Normalize(nn.Module):
    """(B, 3, H, W) RGB in [0, 1] -> ImageNet-normalised, in float32."""

    mean: Tensor
    std: Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    def forward(self, image: Tensor) -> Tensor:
        return (image - self.mean) / self.std


class UnpaddedConv2d(nn.Module):
    """A convolution without its zero padding, sharing the wrapped one's weights."""

    def __init__(self, conv: nn.Module) -> None:
        super().__init__()
        if not isinstance(conv, nn.Conv2d):
            raise TypeError(f"expected a convolution, got {type(conv).__name__}")
        self.conv = conv

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(x, self.conv.weight, self.conv.bias)


class VGG19(nn.Module):
    """VGG19's ``features``, with two changes at the picture's edges.

    1. The first block sees the picture's own pixels at its edges. VGG pads
       each convolution's input with zeros, which for the first block is a
       dark frame around the picture, and the style losses pushed the
       outermost pixels towards white: 10 to 14 % of the top row and right
       column of a 512 px result, and sometimes a whole corner. Here the
       picture is mirrored by ``MIRRORED_BORDER`` pixels before the first
       block, whose two convolutions run unpadded (``UnpaddedConv2d``), so
       the block's output keeps the picture's size; under 2 % of the edge
       pixels are near white (none inside it). Measured in one
       process, it costs nothing per iteration. Mirroring before every
       convolution (``padding_mode="reflect"``) cost 54 % more, and doing it
       from the second block on left the edges as they were. ``conv1_1`` and
       ``relu1_1`` are ``MIRRORED_BORDER - 1`` pixels wider on each side.
    2. The pools keep an odd side's last row or column, which VGG's own
       (2x2, stride 2) drop. What was left of that row reached the deeper
       layers only through its neighbours' receptive fields: in a 512x341
       image the bottom row got 0.2 to 0.4 times an inner row's gradient
       from the content layer, nothing held it to the photo, and 35 % of it
       came out near white. These pools round up (``ceil_mode``): the last
       row is a window of its own. Sizes divisible by 16 see no difference.

    Each max pool also has an average-pooling twin.

    Every module a hook can be put on belongs to this object, which lives as
    long as the weights are in use; ``TruncatedVGG`` only borrows them.

    Args:
        features: torchvision's VGG19 ``features`` (37 modules).
    """

    def __init__(self, features: nn.Sequential) -> None:
        super().__init__()
        if len(features) != len(LAYER_NAMES):
            raise ValueError(f"expected VGG19 features with {len(LAYER_NAMES)} modules, got {len(features)}")
        self.features = features
        pools = [name for name in LAYER_NAMES if name.startswith("pool")]
        self.unpadded = nn.ModuleDict(
            {name: UnpaddedConv2d(features[LAYER_NAMES.index(name)]) for name in FIRST_BLOCK_CONVS}
        )
        self.max_pools = nn.ModuleDict({name: nn.MaxPool2d(kernel_size=2, stride=2, ceil_mode=True) for name in pools})
        self.avg_pools = nn.ModuleDict({name: nn.AvgPool2d(kernel_size=2, stride=2, ceil_mode=True) for name in pools})
        self.eval().requires_grad_(False)

    def layer(self, name: str, pooling: str = "max") -> nn.Module:
        if name in self.unpadded:
            return self.unpadded[name]
        if name in self.max_pools:
            return self.avg_pools[name] if pooling == "avg" else self.max_pools[name]
        return self.features[LAYER_NAMES.index(name)]


class TruncatedVGG(nn.Module):
    """VGG19 up to and including the deepest of ``layers``: nothing nobody reads runs.

    Average pooling, which Gatys et al. (2016) found to give smoother
    gradients than VGG's max pooling, is available as ``pooling="avg"``.

    Args:
        vgg: the network whose modules (and weights) are used.
        layers: names of every layer some loss reads.
        pooling: "max" or "avg".
    """

    def __init__(self, vgg: VGG19, layers: Iterable[str], pooling: str = "max") -> None:
        super().__init__()
        wanted = set(layers)
        if not wanted:
            raise ValueError("TruncatedVGG needs at least one layer")
        stop = deepest(wanted)
        self.names = LAYER_NAMES[: stop + 1]
        self.normalize = Normalize()
        self.layers = nn.Sequential(*(vgg.layer(name, pooling) for name in self.names))
        self.eval().requires_grad_(False)

    def module(self, name: str) -> nn.Module:
        """The module whose output is layer ``name``."""
        try:
            return self.layers[self.names.index(name)]
        except ValueError:
            raise KeyError(f"layer {name} is deeper than this network ({self.names[-1]})") from None

    def forward(self, image: Tensor, memory_format: torch.memory_format = torch.contiguous_format) -> Tensor:
        """image: (B, 3, H, W) RGB in [0, 1] -> output of the deepest layer."""
        mirrored = F.pad(self.normalize(image), (MIRRORED_BORDER,) * 4, mode="reflect")
        return self.layers(mirrored.contiguous(memory_format=memory_format))


@dataclass
class Captured:
    """What the hooks saw during the last forward pass.

    Attributes:
        activations: content layer -> (B, C, H, W), in the compute dtype.
        grams: style layer -> (B, C, C) Gram matrix, float32.
    """

    activations: dict[str, Tensor] = field(default_factory=dict)
    grams: dict[str, Tensor] = field(default_factory=dict)

    def clear(self) -> None:
        self.activations.clear()
        self.grams.clear()


@contextmanager
def capture(
    net: TruncatedVGG, content_layers: Iterable[str] = (), style_layers: Iterable[str] = ()
) -> Iterator[Captured]:
    """Forward hooks on the named layers for the duration of the block.

    Content layers store their activation, style layers their Gram matrix
    (computed inside the hook, so the activation itself need not be kept;
    the hook puts a ``gram_tap`` in the network's path).
    Every handle is removed on exit: normal, exception, or generator close.

    Yields:
        The ``Captured`` record the hooks fill on each forward pass.
    """
    captured = Captured()
    handles: list[RemovableHandle] = []
    content, style = set(content_layers), set(style_layers)

    def make_hook(name: str) -> Callable[[nn.Module, tuple[Tensor, ...], Tensor], Tensor]:
        keep, summarise = name in content, name in style
        # VGG's ReLUs run in place (as torchvision builds them): after a
        # convolution, the network goes on with a copy, so that the ReLU
        # cannot change what the losses saved.
        copy = name.startswith("conv")

        def hook(module: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> Tensor:
            passed_on = output
            if summarise:
                # The Gram tap goes into the network's path: its backward adds
                # the Gram's gradient to the downstream one in the same matmul.
                passed_on, captured.grams[name] = gram_tap(output)
            if keep:
                captured.activations[name] = output
            return passed_on.clone() if copy else passed_on

        return hook

    try:
        for name in sorted(content | style, key=LAYER_NAMES.index):
            handles.append(net.module(name).register_forward_hook(make_hook(name)))
        yield captured
    finally:
        for handle in handles:
            handle.remove()
        captured.clear()
