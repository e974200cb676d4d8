"""The loss at one scale: the network, its hooks, the targets, and the terms they make.

Gatys et al. (2016): the content term matches activations at the content
layers, a style loss matches a statistic of each style layer's features (the
Gram matrix), and picture terms (total variation, a video's temporal term)
act on the picture itself: the terms are objects (``terms``). Every term is
normalised by its target's magnitude (``losses``), so its weight means the
same at any size.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Self

import torch
from PIL import Image
from torch import Tensor

from ..errors import StyleStudioError
from ..io.tensors import resized_tensor
from ..network.device import Compute
from ..network.instant import instant_look
from ..network.vgg import FeatureNetwork, Sides, TruncatedNetwork
from ..progress import Losses
from ..settings import STYLE_LOSS_KINDS, Settings
from . import color, palette
from .capture import Captured, capture
from .guided import LayerMask, ScaleRegions, StyleGroup
from .inputs import ScaleInputs, StyleCache
from .loss_scale import LossScale
from .palette import ColourTerm
from .statistics import Values
from .terms import ContentTerm, PictureTerm, Smoothness, StyleLoss, StyleTerm, Temporal

if TYPE_CHECKING:
    from ..network.instant import TunedLook

#: Each picture term's maker: (the pictures at this scale, the settings) -> the term, or None where it does not
#: apply. In this order in records.
PICTURE_TERMS: tuple[Callable[[ScaleInputs, Settings], PictureTerm | None], ...] = (
    Smoothness.of,
    Temporal.of,
    ColourTerm.of,
)


def style_loss(name: str) -> StyleLoss:
    """The style loss ``Settings.style_loss`` names, from the class its ``settings.STYLE_LOSS_KINDS`` line says."""
    module, _, cls = STYLE_LOSS_KINDS[name].where.partition(":")
    kind: type[StyleLoss] = getattr(importlib.import_module(f".{module}", __package__), cls)
    return kind()


def vgg_input(image: Tensor) -> Tensor:
    """The optimised tensor as the network's RGB input: luminance (C = 1) is repeated over 3 channels."""
    return image.expand(-1, 3, -1, -1) if image.shape[1] == 1 else image


def painted_look(
    settings: Settings, content: Image.Image, styles: Sequence[Image.Image], device: torch.device,
    tuned: TunedLook | None = None,
) -> Image.Image:  # fmt: skip
    """The look a run with a look's start (``instant`` or ``tuned``) starts from, as the network paints it.

    ``instant``: the instant look (``network.instant``: a feed-forward network paints the photo at once, in the
    styles blended). ``tuned``: the look tuned to the painting (``run.tuning``), at the run's size.
    """
    network = instant_look(str(device))
    if settings.init == "tuned":
        if tuned is None:
            raise StyleStudioError("the tuned start needs the look tuned to the painting")
        return network.paint(content, tuned.vector.to(device), settings.size, tuned.on(device))
    return network.paint(content, network.blend(styles, settings.blend_weights(len(styles))))


def initial_image(
    settings: Settings,
    inputs: ScaleInputs,
    content: Image.Image,
    styles: Sequence[Image.Image],
    look: Image.Image | None = None,
) -> Tensor:
    """The picture a run starts from at its first scale (``settings.init``), in ``inputs.content``'s format.

    ``instant`` and ``tuned``: the look (``painted_look``, given). Alone (a run that optimises nothing) it is the
    picture as the network painted it. A run that optimises from the instant look starts from its strokes in the
    styles' colours (as the palette start carries them onto the photo) over the photo's composition
    (``color.composed``): the network lightens and darkens whole areas at will, and the optimisation would keep
    those moves. The look alone keeps its own colours: they are part of the style it closes at half size
    (docs/performance.md). The tuned look keeps the photo's layout and the painting's colours itself: a run goes
    on from it as it is.
    """
    width, height = inputs.size
    device = inputs.content.device
    weights = settings.blend_weights(len(inputs.styles))
    if settings.init in ("instant", "tuned"):
        if look is None:
            raise StyleStudioError(f"the {settings.init} start needs its look")
        painted = resized_tensor(look, (width, height)).to(device)
        if settings.preserve_colors:
            painted = color.luminance(painted).clamp(0, 1)
            return color.composed(painted, inputs.content) if settings.optimises else painted
        if not settings.optimises or settings.init == "tuned":
            return painted
        strokes = palette.recoloured(painted, inputs.styles, weights, inputs.regions.groups)
        return color.composed(strokes, _palette(inputs, weights))
    style = styles[0]
    if settings.init == "noise":
        generator = torch.Generator().manual_seed(settings.seed)
        channels = inputs.content.shape[1]
        return torch.rand(1, channels, height, width, generator=generator).to(device)
    if settings.init == "style":
        start = resized_tensor(style, (width, height)).to(device)
        return color.luminance(start).clamp(0, 1) if settings.preserve_colors else start
    if settings.init == "palette" and not settings.preserve_colors:  # preserved colours: the photo's, as it is
        return _palette(inputs, weights)
    return inputs.content.clone()


def _palette(inputs: ScaleInputs, weights: Sequence[float]) -> Tensor:
    """The photo in the styles' colours, each region's in its own (the ``palette`` start)."""
    return palette.recoloured(inputs.content, inputs.styles, weights, inputs.regions.groups)


@dataclass(frozen=True)
class TileDone:
    """Part of an evaluation done: ``done`` of ``parts``."""

    done: int
    parts: int


@dataclass(frozen=True)
class Terms:
    """The weighted loss terms of one evaluation, as scalar float32 tensors.

    Attributes:
        total: their sum.
        parts: the content term and each picture term, by name.
        style: style layer -> its term.
    """

    total: Tensor
    parts: dict[str, Tensor]
    style: dict[str, Tensor]

    def losses(self, grad_norm: Tensor) -> Losses:
        """As numbers, read from the device in one transfer."""
        values = [self.total, grad_norm, *self.parts.values(), *self.style.values()]
        total, grad, *rest = torch.stack([v.detach().float() for v in values]).tolist()
        parts, style = rest[: len(self.parts)], rest[len(self.parts) :]
        return Losses(total, dict(zip(self.parts, parts, strict=True)), dict(zip(self.style, style, strict=True)), grad)


class Objective:
    """The loss at one scale for one set of layers, as a context manager.

    Entering registers the hooks and computes the targets through them;
    leaving removes every hook, however the block ends.

    Args:
        network: the feature network (on the compute device, in its dtype).
        inputs: the pictures at this scale.
        settings: layers and loss weights.
        compute: device, precision and memory format.
    """

    def __init__(self, network: FeatureNetwork, inputs: ScaleInputs, settings: Settings, compute: Compute) -> None:
        self.compute = compute
        self.content_layers = tuple(settings.content_layers)
        self.style_layers = tuple(settings.active_style_layers)
        layers = set(self.content_layers) | set(self.style_layers)
        if not layers:
            raise StyleStudioError("nothing to optimise: give a style layer a weight above 0 or choose a content layer")
        need = network.min_input_side(layers)
        width, height = inputs.size
        if min(width, height) < need:
            raise StyleStudioError(
                f"the image is {width}×{height} pixels at this scale; the layers in use "
                f"need at least {need} pixels on each side. Use a larger size or fewer scales"
            )
        self.net = TruncatedNetwork(network, layers, settings.pooling)
        self._settings = settings
        self.loss = style_loss(settings.style_loss)
        self.groups: tuple[StyleGroup, ...] = inputs.regions.groups
        self.guided = inputs.regions.guided
        self._map_gradient: Tensor | None = None
        self._map_source: Tensor | None = None
        self._hooks = contextlib.ExitStack()
        self.captured: Captured = self._hooks.enter_context(
            capture(self.net, *self._hooked_layers(), self.loss.statistic)
        )
        self._guide = self._layer_masks if self.guided else None
        self.captured.guide = self._guide
        try:
            self._compute_targets(inputs, settings)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Remove the hooks (also what leaving the ``with`` block does)."""
        self._hooks.close()

    def _hooked_layers(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(layers whose activations the hooks keep, layers whose statistics they compute)."""
        return self.content_layers, self.style_layers

    def _layer_masks(self, height: int, width: int) -> list[LayerMask]:
        """Each style group's mask at a layer of (height, width) positions: the hooks' guide."""
        return [group.at(height, width) for group in self.groups]

    def regroup(self, regions: ScaleRegions, settings: Settings) -> bool:
        """Take new regions (painted during a run); False when they need another objective (new hooks)."""
        if regions.guided != self.guided:
            return False
        self.groups = regions.groups
        self.style.regroup(self.groups, settings)
        for term in self.picture_terms:
            term.regroup(self.groups, settings)
        return True

    def _forward(self, image: Tensor, mirrored: Sides | None = None) -> None:
        self.captured.clear()
        dtype = self.compute.autocast_dtype
        with torch.autocast(self.compute.device.type, dtype=dtype, enabled=dtype is not None):
            self.net(image, self.compute.memory_format, mirrored)

    @torch.no_grad()
    def summarise(self, picture: Tensor) -> tuple[dict[str, Tensor], dict[str, Values]]:
        """(content layer -> activation, style layer -> statistic) of a whole picture, (1, 3, H, W)."""
        captured = self.captured
        captured.guide = None  # a whole picture's own statistics (the style images' targets)
        try:
            self._forward(picture)
            activations = {k: captured.activations[k].detach().clone() for k in self.content_layers}
            statistics = {k: tuple(v.detach().clone() for v in captured.statistics[k]) for k in self.style_layers}
        finally:
            captured.guide = self._guide
            captured.clear()
        return activations, statistics

    def _compute_targets(self, inputs: ScaleInputs, settings: Settings) -> None:
        content = vgg_input(inputs.content)
        self.content = ContentTerm(self.summarise(content)[0], settings)
        # With preserved colours the styles' luminance is matched to each frame's: their statistics differ.
        known = (
            inputs.known_styles if inputs.known_styles is not None and not settings.preserve_colors else StyleCache()
        )
        sizes = tuple(tuple(s.shape) for s in inputs.styles)
        key = (self.style_layers, settings.pooling, type(self).__name__, type(self.loss).__name__, sizes)
        styles = known.get(key, lambda: [self.summarise(s)[1] for s in inputs.styles])
        self.style = StyleTerm(self.loss, styles, self.groups, settings)
        made = (make(inputs, settings) for make in PICTURE_TERMS)
        self.picture_terms: tuple[PictureTerm, ...] = tuple(term for term in made if term is not None)

    def content_of(self, picture: Tensor) -> ContentTerm:
        """The content term of another photo (of the picture's size), for ``aim_at``: a look tuned on several
        photos keeps one objective and its style targets (``run.tuning``)."""
        return ContentTerm(self.summarise(vgg_input(picture))[0], self._settings)

    def aim_at(self, content: ContentTerm) -> None:
        """Measure the content against another photo's term (``content_of``) from the next evaluation on."""
        self.content = content

    def reweight(self, settings: Settings) -> float:
        """Take new loss weights (the style layers must stay the same).

        Returns:
            The largest ratio by which a term's factor moved, either way
            (1 when none moved, infinite when a term turned on or off).
        """
        before = self._factors()
        self.content.reweigh(settings)
        self.style.reweigh(settings)
        for term in self.picture_terms:
            term.reweigh(settings)
        return max(map(_ratio, before, self._factors()), default=1.0)

    def _factors(self) -> list[float]:
        style = [f for factors in self.style.factors.values() for f in factors]
        pictures = [term.factor() for term in self.picture_terms]
        return [*map(float, [*self.content.factors.values(), *style]), *pictures]

    def evaluate(self, image: Tensor) -> Terms:
        """Loss terms for ``image``, the optimised tensor (1, C, H, W)."""
        self._forward(vgg_input(image))
        content = self.content(self.captured.activations, image)
        style = {k: self._style_term(k) for k in self.style_layers}
        if self.captured.taps:
            self._catch_map_gradient()
        parts = {"content": content, **{term.name: term(image) for term in self.picture_terms}}
        self.captured.clear()
        # One stack and sum: fewer autograd nodes than a chain of additions.
        return Terms(torch.stack([*parts.values(), *style.values()]).sum(), parts, style)

    # -- the style map --------------------------------------------------------------------

    def watch(self, layer: str | None) -> None:
        """Make the style map of ``layer`` (a style layer) in the evaluations to come; None: none (no cost)."""
        self.captured.watched = {layer} if layer in self.style_layers else set()
        self._map_gradient = self._map_source = None

    def style_map(self) -> Tensor | None:
        """Where the last evaluation's picture is furthest from the style at the watched layer: (h, w) float32 >= 0.

        Grad-CAM's recipe (Selvaraju et al. 2017) with the layer's style loss
        for a class score: the gradient of that loss with respect to the
        layer's activations (caught by a hook on them), times the
        activations, summed over channels. Its magnitude, where Grad-CAM keeps
        the positive part: a style loss is lowered by more of a texture where
        the picture lacks it as much as by less where it has too much (a
        photo against a painting is mostly the first, all negative).
        """
        if self._map_gradient is None or self._map_source is None:
            return None
        weighted = (self._map_gradient.float() * self._map_source.float()).sum(1)[0]
        return weighted.abs()

    def _catch_map_gradient(self) -> None:
        """Hook the watched layer's tap: its gradient is the layer's style loss's own."""
        self._map_gradient = self._map_source = None
        for tap in self.captured.taps.values():
            self._map_source = tap.detach()

            def keep(grad: Tensor) -> None:
                self._map_gradient = grad.detach()

            tap.register_hook(keep)  # type: ignore[no-untyped-call]  # on a tensor of this evaluation only: it goes with it

    def _style_term(self, layer: str) -> Tensor:
        """A style layer's term from the last forward pass: one per group, added up."""
        captured = self.captured
        return self.style.layer_term(layer, captured.guided[layer] if self.guided else [captured.statistics[layer]])

    def gradient(self, image: Tensor, loss_scale: LossScale) -> Generator[TileDone, None, Terms]:
        """The loss terms of ``image``, with their gradient added to ``image.grad``.

        A generator, so that an evaluation in parts (``tiles.TiledObjective``)
        can report each part as it is done; this one is done in one pass and
        reports nothing. Its return value is the terms.
        """
        terms = self.evaluate(image)
        loss_scale.backward(terms.total, image)
        yield from ()
        return terms


def _ratio(a: float, b: float) -> float:
    if a == b:
        return 1.0
    return max(a, b) / min(a, b) if min(a, b) > 0 else math.inf
