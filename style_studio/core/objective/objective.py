"""The loss at one scale: the network, its hooks, the targets, and the terms they make.

Gatys et al. (2016): the content term matches activations at the content
layers, each style term matches a Gram matrix at a style layer, and a
total-variation term keeps the picture smooth. Every term is normalised by
its target's magnitude (``losses``), so its weight means the same at any size.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Generator, Hashable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import torch
from PIL import Image
from torch import Tensor

from ..errors import StyleStudioError
from ..io.imageio import fit_size
from ..io.tensors import resized_tensor
from ..network.device import Compute
from ..network.vgg import FeatureNetwork, Sides, TruncatedNetwork
from ..progress import Losses
from ..settings import Settings
from . import color
from .capture import Captured, capture
from .guided import WHOLE_PICTURE, LayerMask, ScaleRegions, StyleGroup
from .loss_scale import LossScale
from .losses import magnitude, total_variation, weighted_mse
from .regions import Regions
from .temporal import TemporalTarget


class GramCache:
    """The style images' Gram matrices by layers and sizes: computed once for all the frames of a clip."""

    def __init__(self) -> None:
        self._known: dict[Hashable, list[dict[str, Tensor]]] = {}

    def get(self, key: Hashable, compute: Callable[[], list[dict[str, Tensor]]]) -> list[dict[str, Tensor]]:
        if key not in self._known:
            self._known[key] = compute()
        return self._known[key]

    def __len__(self) -> int:
        return len(self._known)


def vgg_input(image: Tensor) -> Tensor:
    """The optimised tensor as the network's RGB input: luminance (C = 1) is repeated over 3 channels."""
    return image.expand(-1, 3, -1, -1) if image.shape[1] == 1 else image


def initial_image(settings: Settings, inputs: ScaleInputs, style: Image.Image) -> Tensor:
    """The picture a run starts from at its first scale (``settings.init``), in ``inputs.content``'s format."""
    width, height = inputs.size
    device = inputs.content.device
    if settings.init == "noise":
        generator = torch.Generator().manual_seed(settings.seed)
        channels = inputs.content.shape[1]
        return torch.rand(1, channels, height, width, generator=generator).to(device)
    if settings.init == "style":
        start = resized_tensor(style, (width, height)).to(device)
        return color.luminance(start).clamp(0, 1) if settings.preserve_colors else start
    return inputs.content.clone()


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
        known_grams: the style images' Gram matrices, kept between the runs of a clip's frames; None: computed.
    """

    content: Tensor
    styles: tuple[Tensor, ...]
    regions: ScaleRegions = field(default_factory=lambda: ScaleRegions(WHOLE_PICTURE, None))
    temporal: TemporalTarget | None = None
    known_grams: GramCache | None = None

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


@dataclass(frozen=True)
class TileDone:
    """Part of an evaluation done: ``done`` of ``parts``."""

    done: int
    parts: int


@dataclass(frozen=True)
class Terms:
    """The weighted loss terms of one evaluation, as scalar float32 tensors."""

    total: Tensor
    content: Tensor
    style: dict[str, Tensor]
    tv: Tensor
    temporal: Tensor | None = None

    def losses(self, grad_norm: Tensor) -> Losses:
        """As numbers, read from the device in one transfer."""
        temporal = self.temporal if self.temporal is not None else self.tv.new_zeros(())
        parts = [self.total, self.content, self.tv, grad_norm, temporal, *self.style.values()]
        total, content, tv, grad, kept, *style = torch.stack([p.detach().float() for p in parts]).tolist()
        return Losses(total, content, dict(zip(self.style, style, strict=True)), tv, grad, kept)


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
        self.temporal = inputs.temporal
        self.groups: tuple[StyleGroup, ...] = inputs.regions.groups
        self.guided = inputs.regions.guided
        self._map_gradient: Tensor | None = None
        self._map_source: Tensor | None = None
        self._hooks = contextlib.ExitStack()
        self.captured: Captured = self._hooks.enter_context(capture(self.net, *self._hooked_layers()))
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
        """(layers whose activations the hooks keep, layers whose Gram matrices they compute)."""
        return self.content_layers, self.style_layers

    def _layer_masks(self, height: int, width: int) -> list[LayerMask]:
        """Each style group's mask at a layer of (height, width) positions: the hooks' guide."""
        return [group.at(height, width) for group in self.groups]

    def regroup(self, regions: ScaleRegions, settings: Settings) -> bool:
        """Take new regions (painted during a run); False when they need another objective (new hooks)."""
        if regions.guided != self.guided:
            return False
        self.groups = regions.groups
        self._take_weights(settings)
        return True

    def _forward(self, image: Tensor, mirrored: Sides | None = None) -> None:
        self.captured.clear()
        dtype = self.compute.autocast_dtype
        with torch.autocast(self.compute.device.type, dtype=dtype, enabled=dtype is not None):
            self.net(image, self.compute.memory_format, mirrored)

    @torch.no_grad()
    def summarise(self, picture: Tensor) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
        """(content layer -> activation, style layer -> Gram matrix) of a whole picture, (1, 3, H, W)."""
        captured = self.captured
        captured.guide = None  # a whole picture's own Gram matrices (the style images' targets)
        try:
            self._forward(picture)
            activations = {k: captured.activations[k].detach().clone() for k in self.content_layers}
            grams = {k: captured.grams[k].detach().clone() for k in self.style_layers}
        finally:
            captured.guide = self._guide
            captured.clear()
        return activations, grams

    def _compute_targets(self, inputs: ScaleInputs, settings: Settings) -> None:
        self.content_targets, _ = self.summarise(vgg_input(inputs.content))
        self.content_magnitudes = {k: magnitude(v) for k, v in self.content_targets.items()}
        # With preserved colours the styles' luminance is matched to each frame's: their Gram matrices differ.
        known = inputs.known_grams if inputs.known_grams is not None and not settings.preserve_colors else GramCache()
        key = (self.style_layers, settings.pooling, type(self).__name__, *(tuple(s.shape) for s in inputs.styles))
        self.style_grams: list[dict[str, Tensor]] = known.get(
            key, lambda: [self.summarise(style)[1] for style in inputs.styles]
        )
        self.tv_reference = total_variation(vgg_input(inputs.content)).detach().clamp_min(1e-8)
        self._take_weights(settings)

    def reweight(self, settings: Settings) -> float:
        """Take new loss weights (the style layers must stay the same).

        Returns:
            The largest ratio by which a term's factor moved, either way
            (1 when none moved, infinite when a term turned on or off).
        """
        before = self._factors()
        self._take_weights(settings)
        return max(map(_ratio, before, self._factors()), default=1.0)

    @torch.no_grad()
    def _take_weights(self, settings: Settings) -> None:
        """The style targets and every term's factor, from ``settings``' loss weights.

        A style target is the weighted sum of the style images' Gram matrices
        (Gatys et al.'s style blending), one per style group (region). A term's
        factor is its weight over its target's magnitude, so the loss needs one
        multiplication per term; a group's is also scaled by its strength and
        its share of the stylised area (``regions``).
        """
        blend = settings.blend_weights(len(self.style_grams))
        blends = [_normalised(g.blend) if g.blend is not None else blend for g in self.groups]
        self.style_targets: dict[str, list[Tensor]] = {
            layer: [
                torch.stack([w * grams[layer] for w, grams in zip(b, self.style_grams, strict=True)]).sum(0)
                for b in blends
            ]
            for layer in self.style_layers
        }
        layer_weights = settings.style_layer_weights
        self.style_factors: dict[str, list[Tensor]] = {
            k: [
                settings.style_weight * layer_weights[k] * g.strength * g.share / magnitude(v)
                for g, v in zip(self.groups, targets, strict=True)
            ]
            for k, targets in self.style_targets.items()
        }
        # Content layers are averaged.
        self.content_factors = {
            k: settings.content_weight / (len(self.content_layers) * m) for k, m in self.content_magnitudes.items()
        }
        self.tv_factor = settings.tv_weight / self.tv_reference

    def _factors(self) -> list[float]:
        style = [f for factors in self.style_factors.values() for f in factors]
        return [float(f) for f in [*self.content_factors.values(), *style, self.tv_factor]]

    def evaluate(self, image: Tensor) -> Terms:
        """Loss terms for ``image``, the optimised tensor (1, C, H, W)."""
        self._forward(vgg_input(image))
        activations = self.captured.activations
        content_terms = [
            weighted_mse(activations[k], self.content_targets[k], self.content_factors[k]) for k in self.content_layers
        ]
        style = {k: self._style_term(k) for k in self.style_layers}
        if self.captured.taps:
            self._catch_map_gradient()
        tv = total_variation(image) * self.tv_factor
        content = torch.stack(content_terms).sum() if content_terms else image.new_zeros((), dtype=torch.float32)
        temporal = self.temporal.term(image) if self.temporal is not None else None
        # One stack and sum: fewer autograd nodes than a chain of additions.
        total = torch.stack([content, tv, *style.values(), *([temporal] if temporal is not None else [])]).sum()
        self.captured.clear()
        return Terms(total, content, style, tv, temporal)

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
        targets, factors = self.style_targets[layer], self.style_factors[layer]
        if not self.guided:
            return weighted_mse(self.captured.grams[layer], targets[0], factors[0])
        grams = self.captured.guided[layer]
        terms = [
            weighted_mse(value, target, factor) for value, target, factor in zip(grams, targets, factors, strict=True)
        ]
        return torch.stack(terms).sum() if len(terms) > 1 else terms[0]

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


def _normalised(blend: tuple[float, ...]) -> list[float]:
    total = sum(blend)
    return [w / total for w in blend]


def _ratio(a: float, b: float) -> float:
    if a == b:
        return 1.0
    return max(a, b) / min(a, b) if min(a, b) > 0 else math.inf
