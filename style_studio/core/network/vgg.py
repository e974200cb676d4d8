"""The feature network the losses read: VGG19 as the app builds it, truncated where the losses stop.

``FeatureNetwork`` is any ordered stack of named layers; ``vgg19`` builds the
app's own from torchvision's VGG19 ``features``, and tests build tiny ones
(pystiche tests its losses on encoders like ``nn.Conv2d(3, 3, 1)``).
``TruncatedNetwork`` runs a network only up to the deepest layer a loss
reads. The hooks that read it are in ``objective.capture``.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .layers import LAYER_NAMES, MIRRORED_BORDER

# torchvision's VGG19 was trained on RGB in [0, 1] normalised with these.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: VGG19's first block, which sees the mirrored border instead of zero padding.
FIRST_BLOCK_CONVS = ("conv1_1", "conv1_2")

Pooling = str  # "max" or "avg"


class Normalize(nn.Module):
    """(B, 3, H, W) RGB in [0, 1] -> normalised with a per-channel mean and deviation."""

    mean: Tensor
    std: Tensor

    def __init__(self, mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))

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


def _average_twin(pool: nn.MaxPool2d) -> nn.AvgPool2d:
    return nn.AvgPool2d(pool.kernel_size, pool.stride, pool.padding, ceil_mode=pool.ceil_mode)


class FeatureNetwork(nn.Module):
    """An ordered stack of named layers: every module a loss can read, by name.

    Each max pool gets an average-pooling twin (Gatys et al. 2016 found average
    pooling gives smoother gradients), chosen per run with ``pooling="avg"``.

    Args:
        layers: (name, module) in the order they run.
        normalize: applied to the (B, 3, H, W) RGB input first (identity if None).
        mirrored_border: pixels of the picture mirrored around it before the
            first layer (for networks whose first layers run unpadded).
    """

    def __init__(
        self, layers: Sequence[tuple[str, nn.Module]], *, normalize: nn.Module | None = None, mirrored_border: int = 0
    ) -> None:
        super().__init__()
        if not layers:
            raise ValueError("a feature network needs at least one layer")
        self.names = tuple(name for name, _ in layers)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"layer names must be unique: {self.names}")
        self.stack = nn.ModuleDict(dict(layers))
        self.average_pools = nn.ModuleDict(
            {name: _average_twin(m) for name, m in layers if isinstance(m, nn.MaxPool2d)}
        )
        self.normalize = normalize if normalize is not None else nn.Identity()
        self.mirrored_border = mirrored_border
        self.eval().requires_grad_(False)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"this network has no layer {name!r}") from None

    def layer(self, name: str, pooling: Pooling = "max") -> nn.Module:
        if pooling == "avg" and name in self.average_pools:
            return self.average_pools[name]
        return self.stack[name]

    def min_input_side(self, names: Iterable[str]) -> int:
        """Smallest picture side from which every one of ``names`` is computed.

        Each pool before the deepest layer divides the side by its stride; the
        mirrored border needs a picture wider than itself.
        """
        deepest = max(self.index(n) for n in names)
        factor = 1
        for name in self.names[:deepest]:
            module = self.stack[name]
            if isinstance(module, nn.MaxPool2d | nn.AvgPool2d):
                stride = module.stride
                factor *= stride if isinstance(stride, int) else math.prod(stride)
        return max(self.mirrored_border + 1, factor)


def vgg19(features: nn.Sequential) -> FeatureNetwork:
    """VGG19's ``features`` by layer name, with two changes at the picture's edges.

    1. The first block sees the picture mirrored by ``MIRRORED_BORDER``
       pixels, and its two convolutions run unpadded: VGG's zero padding is a
       dark frame around the picture, and the style losses turned edge pixels
       white. ``conv1_1`` and ``relu1_1`` are therefore 1 px wider on each side.
    2. The pools round up (``ceil_mode``): VGG's own drop an odd side's last
       row, which then reached the deep layers too weakly to be held to the
       photo, and came out white.

    Args:
        features: torchvision's VGG19 ``features`` (37 modules), or a module
            stack of the same layout (tests use narrow ones).
    """
    if len(features) != len(LAYER_NAMES):
        raise ValueError(f"expected VGG19 features with {len(LAYER_NAMES)} modules, got {len(features)}")
    layers: list[tuple[str, nn.Module]] = []
    for name, module in zip(LAYER_NAMES, features, strict=True):
        if name in FIRST_BLOCK_CONVS:
            module = UnpaddedConv2d(module)
        elif name.startswith("pool"):
            module = nn.MaxPool2d(kernel_size=2, stride=2, ceil_mode=True)
        layers.append((name, module))
    return FeatureNetwork(layers, normalize=Normalize(), mirrored_border=MIRRORED_BORDER)


def own_modules(network: FeatureNetwork) -> FeatureNetwork:
    """A copy of ``network``'s modules over the same weights (no tensor is copied): a run registers its hooks on
    modules of its own, so that two runs in one process at once never read, or feed, each other's layers."""
    shared = {id(tensor): tensor for tensor in itertools.chain(network.parameters(), network.buffers())}
    return copy.deepcopy(network, shared)


class _Fp16Stored(torch.autograd.Function):
    """The identity, with its value rounded to fp16's numbers going forward and its gradient coming back."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: Tensor) -> Tensor:
        return x.half().to(x.dtype)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: Tensor) -> Tensor:
        return grad.half().to(grad.dtype)


def store_as_fp16(network: FeatureNetwork) -> FeatureNetwork:
    """Make a float32 ``network`` compute fp16's numbers on float32 kernels; returns it.

    The weights, every layer's input and output, and every gradient passed
    between layers are rounded to fp16, with its range (overflow to infinity
    above 65504, underflow below 6e-8) and its 11-bit precision, as a GPU
    stores them under fp16 autocast; inside a layer the arithmetic is float32,
    as tensor cores accumulate. This reproduces what decides whether fp16
    works (the gradient's underflow, the loss scale's overflows) on CPUs,
    whose own fp16 convolutions are far slower than fp32 ones. For tests and
    benchmarks (``Compute.fp16_emulated``); a run on a GPU uses real fp16.
    """
    for module in network.modules():
        for name, parameter in list(module.named_parameters(recurse=False)):
            # New tensors: loaded weights share theirs with the state dict that other runs use.
            rounded = parameter.detach().half().to(parameter.dtype)
            setattr(module, name, nn.Parameter(rounded, requires_grad=False))
    modules = [*network.stack.values(), *network.average_pools.values()]
    for module in modules:
        # Registered before any loss's hooks, so those see the rounded output.
        module.register_forward_pre_hook(lambda _module, inputs: tuple(_Fp16Stored.apply(x) for x in inputs))
        module.register_forward_hook(lambda _module, _inputs, output: _Fp16Stored.apply(output))
    return network


#: Mirrored pixels on each side of a picture: (top, bottom, left, right).
Sides = tuple[int, int, int, int]


def mirror(x: Tensor, border: int | Sides) -> Tensor:
    """``x`` (B, C, H, W) mirrored by ``border`` pixels, as ``F.pad(mode="reflect")``.

    ``border`` is one width for every side, or (top, bottom, left, right): a
    tile of a larger picture is mirrored only on the sides where the picture ends.
    Built from slices, flips and concatenations, whose backward passes are
    deterministic on every device; the backward of CUDA's reflection pad adds
    with atomics, in an order that changes from run to run.
    """
    top, bottom, left, right = (border,) * 4 if isinstance(border, int) else border
    columns = [x[..., 1 : left + 1].flip(-1)] if left else []
    columns += [x] + ([x[..., -right - 1 : -1].flip(-1)] if right else [])
    x = torch.cat(columns, dim=-1) if len(columns) > 1 else x
    rows = [x[..., 1 : top + 1, :].flip(-2)] if top else []
    rows += [x] + ([x[..., -bottom - 1 : -1, :].flip(-2)] if bottom else [])
    return torch.cat(rows, dim=-2) if len(rows) > 1 else x


class TruncatedNetwork(nn.Module):
    """A feature network up to and including the deepest of ``layers``: nothing nobody reads runs.

    Args:
        network: the network whose modules (and weights) are used; it owns them.
        layers: names of every layer some loss reads.
        pooling: "max" or "avg".
    """

    def __init__(self, network: FeatureNetwork, layers: Iterable[str], pooling: Pooling = "max") -> None:
        super().__init__()
        wanted = set(layers)
        if not wanted:
            raise ValueError("a truncated network needs at least one layer")
        stop = max(network.index(n) for n in wanted)
        self.names = network.names[: stop + 1]
        self.normalize = network.normalize
        self.mirrored_border = network.mirrored_border
        self.layers = nn.Sequential(*(network.layer(name, pooling) for name in self.names))
        self.eval().requires_grad_(False)

    def border(self, name: str) -> int:
        """Positions layer ``name``'s map extends beyond the picture on each side.

        The mirrored border, plus each convolution's padding less what its
        kernel eats, up to the layer: in VGG19, 1 for ``conv1_1`` and
        ``relu1_1`` (unpadded), 0 from ``conv1_2`` on.
        """
        border = self.mirrored_border
        for module in self.layers[: self.names.index(name) + 1]:
            if isinstance(module, UnpaddedConv2d):
                border -= (module.conv.kernel_size[0] - 1) // 2
            elif isinstance(module, nn.Conv2d) and not isinstance(module.padding, str):  # "same" keeps the size
                border += module.padding[0] - (module.kernel_size[0] - 1) // 2
        return border

    def module(self, name: str) -> nn.Module:
        """The module whose output is layer ``name``."""
        try:
            return self.layers[self.names.index(name)]
        except ValueError:
            raise KeyError(f"layer {name} is deeper than this network ({self.names[-1]})") from None

    def forward(
        self,
        image: Tensor,
        memory_format: torch.memory_format = torch.contiguous_format,
        mirrored: Sides | None = None,
    ) -> Tensor:
        """image: (B, 3, H, W) RGB in [0, 1] -> output of the deepest layer.

        ``mirrored``: pixels to mirror on each side instead of ``mirrored_border``
        all round (a tile has real pixels where it borders another).
        """
        x = self.normalize(image)
        border = mirrored if mirrored is not None else (self.mirrored_border,) * 4
        if any(border):
            x = mirror(x, border)
        deepest: Tensor = self.layers(x.contiguous(memory_format=memory_format))
        return deepest


def vgg19_layers(config: Sequence[int | str]) -> nn.Sequential:
    """VGG's ``features`` for ``config`` (``layers.vgg19_config``), as torchvision's ``make_layers`` builds them.

    The same modules in the same order, so the same state-dict keys and, under
    the same seed, the same initial values (a test compares them). Built here
    because importing torchvision costs about 3 s at every start (its operators
    pull in torch's compiler), for two lines of it.
    """
    layers: list[nn.Module] = []
    channels = 3
    for item in config:
        if item == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers += [nn.Conv2d(channels, int(item), kernel_size=3, padding=1), nn.ReLU(inplace=True)]
            channels = int(item)
    return nn.Sequential(*layers)
