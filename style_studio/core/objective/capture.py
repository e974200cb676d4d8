"""The forward hooks that read the feature network: content activations and the style layers' statistics.

``capture`` registers forward hooks on the named layers for the duration of a
``with`` block and removes every handle when the block exits, however it exits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from ..network.vgg import TruncatedNetwork
from .guided import LayerMask
from .statistics import Gram, Statistic, Values, guided_tap, statistic_tap


@dataclass
class Captured:
    """What the hooks saw during the last forward pass.

    Attributes:
        activations: content layer -> (B, C, H, W), in the compute dtype.
        statistics: style layer -> its statistic (``statistics``), float32.
    """

    activations: dict[str, Tensor] = field(default_factory=dict)
    statistics: dict[str, Values] = field(default_factory=dict)
    watched: set[str] = field(default_factory=set)
    """Style layers whose style losses' own gradient is wanted (the style map): see ``taps``."""
    taps: dict[str, Tensor] = field(default_factory=dict)
    """watched layer -> a view of its activation that feeds only its style loss, so that
    a hook on it receives the gradient of that loss alone."""
    guide: Callable[[int, int], Sequence[LayerMask]] | None = None
    """With regions: the masks at a layer of (h, w) positions; style layers then give
    one statistic per mask, in ``guided``, instead of one in ``statistics``."""
    guided: dict[str, list[Values]] = field(default_factory=dict)

    def clear(self) -> None:
        self.activations.clear()
        self.statistics.clear()
        self.taps.clear()
        self.guided.clear()


@contextmanager
def capture(
    net: TruncatedNetwork,
    content_layers: Iterable[str] = (),
    style_layers: Iterable[str] = (),
    statistic: Statistic | None = None,
) -> Iterator[Captured]:
    """Forward hooks on the named layers for the duration of the block.

    Content layers store their activation, style layers their ``statistic``
    (the Gram matrix unless given; computed inside the hook, so the activation
    itself need not be kept: the hook puts a ``statistic_tap`` in the network's path). Both see the
    picture's own positions only: a layer whose map extends beyond the
    picture (``relu1_1``, 1 position of mirrored pixels on each side) is
    cropped to it. Counted, those border positions made the losses pull
    harder on the pixels the mirror repeats, the second and third from each
    edge, and drew a frame of style along the edges.
    Every handle is removed on exit: normal, exception, or generator close.

    Yields:
        The ``Captured`` record the hooks fill on each forward pass.
    """
    captured = Captured()
    handles: list[RemovableHandle] = []
    content, style = set(content_layers), set(style_layers)
    statistic = statistic if statistic is not None else Gram()

    def make_hook(name: str) -> Callable[[nn.Module, tuple[Tensor, ...], Tensor], Tensor]:
        keep, summarise = name in content, name in style
        # VGG's ReLUs run in place (as torchvision builds them): before one,
        # the network goes on with a copy, so that the ReLU cannot change
        # what the losses saved.
        position = net.names.index(name)
        following = net.layers[position + 1] if position + 1 < len(net.names) else None
        copy = bool(getattr(following, "inplace", False))
        border = net.border(name)

        def picture_positions(features: Tensor) -> Tensor:
            return features[..., border:-border, border:-border] if border else features

        def summary(features: Tensor) -> Tensor:
            """The features passed on, their statistic (or one per style group) recorded."""
            seen = picture_positions(features)
            if captured.guide is None:
                passed_on, captured.statistics[name] = statistic_tap(seen, statistic)
            else:
                masks = captured.guide(seen.shape[-2], seen.shape[-1])
                passed_on, captured.guided[name] = guided_tap(seen, statistic, masks)
            # A tap on a cropped map cannot stand in for the whole one downstream.
            return features if border else passed_on

        def hook(module: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> Tensor:
            passed_on = output
            if name in captured.watched and output.requires_grad:
                # A branch of its own for the style loss: the gradient reaching it is that loss's alone.
                captured.taps[name] = tap = output.view_as(output)
                if summarise:
                    summary(tap)
            elif summarise:
                passed_on = summary(output)
            if keep:
                captured.activations[name] = picture_positions(output)
            return passed_on.clone() if copy else passed_on

        return hook

    try:
        for name in content | style:
            handles.append(net.module(name).register_forward_hook(make_hook(name)))
        yield captured
    finally:
        for handle in handles:
            handle.remove()
        captured.clear()
