"""The loss's terms as objects, of three kinds.

- A **picture term** is a function of the optimised picture itself: the
  total variation, a video frame's temporal term. It is evaluated on the
  whole picture, tiled or not.
- The **content term** compares activations at the content layers with the
  photo's; tiled, each tile adds its core's share.
- A **style loss** compares a statistic of each style layer's features
  (``statistics``) with the style images' blend, once per style group
  (region); tiled, the statistics are added up over the tiles first and the
  loss's gradient with respect to them is sent back tile by tile.

Every term's weight is divided by its value for an unrelated picture
(``losses``), so a weight means the same at any size and with any network.
A new picture term is a ``PictureTerm`` subclass and a line in
``objective.PICTURE_TERMS``; a new style loss is a ``StyleLoss`` subclass
in a file of its own and a line in ``settings.STYLE_LOSS_KINDS`` (its name,
the window's label, its help and where it is).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor

from ..settings import Settings
from .guided import StyleGroup
from .inputs import ScaleInputs
from .losses import magnitude, total_variation, weighted_mse
from .statistics import Gram, Statistic, Values
from .temporal import TemporalTarget


class PictureTerm(ABC):
    """A term of the optimised picture (1, C, H, W) itself.

    Attributes:
        name: how records and the loss plot name it.
    """

    name: ClassVar[str]

    @abstractmethod
    def __call__(self, image: Tensor) -> Tensor:
        """The weighted term, a float32 scalar."""

    def reweigh(self, settings: Settings) -> None:  # noqa: B027 (most terms take new weights; some keep theirs)
        """Take new loss weights; a term whose weight is fixed for the run ignores them."""

    def factor(self) -> float:
        """What the term is multiplied by: ``Objective.reweight`` compares them."""
        return 1.0

    def regroup(self, groups: Sequence[StyleGroup], settings: Settings) -> None:  # noqa: B027 (most terms see none)
        """Take new style groups (regions painted during a run); a term that does not see them ignores them."""


class Smoothness(PictureTerm):
    """Total variation (``--tv-weight``), relative to the photo's own."""

    name = "tv"

    def __init__(self, content: Tensor, settings: Settings) -> None:
        self.reference = total_variation(content).detach().clamp_min(1e-8)
        self.reweigh(settings)

    def reweigh(self, settings: Settings) -> None:
        self._factor = settings.tv_weight / self.reference

    def factor(self) -> float:
        return float(self._factor)

    def __call__(self, image: Tensor) -> Tensor:
        return total_variation(image) * self._factor

    @classmethod
    def of(cls, inputs: ScaleInputs, settings: Settings) -> Smoothness:
        return cls(inputs.content, settings)


class Temporal(PictureTerm):
    """A video frame kept close to the previous frame warped, where the flow is trusted (``temporal``)."""

    name = "temporal"

    def __init__(self, target: TemporalTarget) -> None:
        self.target = target

    def __call__(self, image: Tensor) -> Tensor:
        return self.target.term(image)

    @classmethod
    def of(cls, inputs: ScaleInputs, settings: Settings) -> Temporal | None:
        return cls(inputs.temporal) if inputs.temporal is not None else None


class ContentTerm:
    """Activations at the content layers matched to the photo's, the layers averaged (``--content-weight``).

    Args:
        targets: content layer -> the photo's activation (1, C, h, w).
    """

    name: ClassVar[str] = "content"

    def __init__(self, targets: Mapping[str, Tensor], settings: Settings) -> None:
        self.targets = dict(targets)
        self.magnitudes = {k: magnitude(v) for k, v in self.targets.items()}
        self.reweigh(settings)

    def reweigh(self, settings: Settings) -> None:
        self.factors = {k: settings.content_weight / (len(self.targets) * m) for k, m in self.magnitudes.items()}

    def __call__(self, activations: Mapping[str, Tensor], like: Tensor) -> Tensor:
        """The term for the whole picture's ``activations``; ``like``: a tensor on the device (for 0 without layers)."""
        terms = [weighted_mse(activations[k], self.targets[k], self.factors[k]) for k in self.targets]
        return torch.stack(terms).sum() if terms else like.new_zeros((), dtype=torch.float32)

    def tile_share(self, layer: str, core: Tensor, rows: slice, cols: slice) -> Tensor:
        """A tile core's share of the term at ``layer``: its positions ``rows``, ``cols`` of the whole map."""
        target = self.targets[layer][..., rows, cols]
        squared = (core.float() - target.float()).square().sum()
        return squared * (self.factors[layer] / self.targets[layer].numel())


class StyleLoss(ABC):
    """How far a statistic of the picture's features is from the style's, before weighting."""

    statistic: ClassVar[Statistic]

    def prepare(self, target: Values) -> Values:
        """The target as ``distance`` and ``magnitude`` take it, from the style's statistic (the blend of the
        styles'): what does not change between iterations is computed here, once."""
        return target

    @abstractmethod
    def distance(self, value: Values, target: Values) -> Tensor:
        """A float32 scalar, 0 at the (prepared) target; ``value``: the picture's statistic."""

    @abstractmethod
    def magnitude(self, target: Values) -> Tensor:
        """The distance's scale for an unrelated picture: the term is divided by it (a float32 scalar)."""


class GramLoss(StyleLoss):
    """Mean squared difference of Gram matrices (Gatys et al. 2016), relative to the target's mean square."""

    statistic = Gram()

    def distance(self, value: Values, target: Values) -> Tensor:
        with torch.autocast(device_type=value[0].device.type, enabled=False):
            return F.mse_loss(value[0].float(), target[0])

    def magnitude(self, target: Values) -> Tensor:
        return magnitude(target[0])


class StyleTerm:
    """One style loss at each style layer, per style group (``--style-weight`` and each layer's weight).

    A group's target is the blend of the style images' statistics (its own
    blend, or the run's); its factor is also scaled by its strength and its
    share of the stylised area (``regions``).

    Args:
        loss: the style loss.
        styles: each style image's statistics, by layer.
        groups: the style groups (one over the whole picture without regions).
    """

    def __init__(
        self, loss: StyleLoss, styles: Sequence[Mapping[str, Values]], groups: Sequence[StyleGroup], settings: Settings
    ) -> None:
        self.loss, self.styles = loss, list(styles)
        self.layers = tuple(settings.active_style_layers)
        self.regroup(groups, settings)

    @property
    def statistic(self) -> Statistic:
        return self.loss.statistic

    def regroup(self, groups: Sequence[StyleGroup], settings: Settings) -> None:
        self.groups = tuple(groups)
        self.reweigh(settings)

    @torch.no_grad()
    def reweigh(self, settings: Settings) -> None:
        blend = settings.blend_weights(len(self.styles))
        blends = [_normalised(g.blend) if g.blend is not None else blend for g in self.groups]
        statistic = self.statistic
        self.targets: dict[str, list[Values]] = {
            layer: [self.loss.prepare(statistic.blend(b, [style[layer] for style in self.styles])) for b in blends]
            for layer in self.layers
        }
        weights = settings.style_layer_weights
        self.factors: dict[str, list[Tensor]] = {
            layer: [
                settings.style_weight * weights[layer] * g.strength * g.share / self.loss.magnitude(target)
                for g, target in zip(self.groups, targets, strict=True)
            ]
            for layer, targets in self.targets.items()
        }

    def layer_term(self, layer: str, values: Sequence[Values]) -> Tensor:
        """The term at ``layer`` from each group's statistic of the picture, added up."""
        terms = [
            self.loss.distance(value, target) * factor
            for value, target, factor in zip(values, self.targets[layer], self.factors[layer], strict=True)
        ]
        return torch.stack(terms).sum() if len(terms) > 1 else terms[0]


def _normalised(blend: tuple[float, ...]) -> list[float]:
    total = sum(blend)
    return [w / total for w in blend]
