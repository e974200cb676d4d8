"""The loss and its exact gradient, evaluated tile by tile: pictures larger than memory.

A style term needs a statistic of each layer's features over the whole
picture (``statistics``: a sum over positions), and its gradient with respect
to one position's features depends only on those features and the gradient
with respect to the statistic (for the Gram matrix, dL/dF = F·(dL/dG + dL/dGᵀ) / N).
So an evaluation takes two passes over the tiles:

1. forward only, nothing kept for the backward pass: each tile's share of
   every style layer's statistic is added up, which gives the style terms
   and their gradient with respect to the statistics;
2. forward and backward per tile, with that gradient held fixed: each tile's
   features are sent back through ``Statistic.backward`` (the tile's share of
   the untiled gradient), with the content term's share.

Each tile is cut out with a halo as wide as the deepest layer's reach, and
its crop starts on the pools' grid, so the features of its core are exactly
the whole picture's; only the core counts. The picture's mirrored border is
applied at its true edges only. The sum over the tiles is the gradient of
the untiled loss, not an approximation (``tests/core/test_tiles.py``
checks every statistic and the image gradient against the untiled ones).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from ..errors import StyleStudioError
from ..network.device import Compute
from ..network.vgg import FeatureNetwork, Sides, TruncatedNetwork, UnpaddedConv2d
from ..settings import Settings
from .inputs import ScaleInputs
from .loss_scale import LossScale
from .objective import Objective, Terms, TileDone, vgg_input
from .statistics import Statistic, Values

T = TypeVar("T")


@dataclass(frozen=True)
class LayerGrid:
    """Where a layer's feature map, as the losses see it, lies on the picture.

    The losses see the picture's positions only (``features.capture`` crops
    ``relu1_1``'s mirrored border), so a crop's map starts at its first pixel.

    Attributes:
        stride: picture pixels per feature position, along each side.
    """

    stride: int

    def length(self, pixels: int) -> int:
        """Positions along a side of ``pixels`` pixels (the pools round up)."""
        return math.ceil(pixels / self.stride)


@dataclass(frozen=True)
class Reach:
    """What a tile needs from the network's geometry.

    Attributes:
        grids: layer name -> its ``LayerGrid``.
        alignment: the deepest layer's stride: crops start on multiples of it.
        halo: pixels a core's features depend on beyond the core, rounded
            up to the alignment.
        border: the network's mirrored border.
    """

    grids: dict[str, LayerGrid]
    alignment: int
    halo: int
    border: int

    @classmethod
    def of(cls, net: TruncatedNetwork) -> Reach:
        """Walk the network's layers: convolutions widen the reach, pools the stride."""
        stride, reach = 1, 0
        grids = {}
        for name, module in zip(net.names, net.layers, strict=True):
            border = net.border(name)
            if isinstance(module, UnpaddedConv2d | nn.Conv2d):
                conv = module.conv if isinstance(module, UnpaddedConv2d) else module
                kernel, padding = conv.kernel_size[0], 0 if isinstance(module, UnpaddedConv2d) else conv.padding[0]
                if conv.stride != (1, 1) or conv.dilation != (1, 1) or kernel % 2 == 0 or not isinstance(padding, int):
                    raise StyleStudioError(f"layer {name} cannot be tiled: only odd, unstrided convolutions can")
                reach += (kernel - 1) // 2 * stride
            elif isinstance(module, nn.MaxPool2d | nn.AvgPool2d):
                size, step = _pair(module.kernel_size), _pair(module.stride)
                if size != step or _pair(module.padding) != 0 or border != 0:
                    raise StyleStudioError(f"layer {name} cannot be tiled: only unpadded, non-overlapping pools can")
                stride *= size
            elif not isinstance(module, nn.ReLU):
                raise StyleStudioError(f"layer {name} ({type(module).__name__}) cannot be tiled")
            if border < 0:
                raise StyleStudioError(f"layer {name} cannot be tiled: it crops the picture")
            grids[name] = LayerGrid(stride)
        return cls(grids, stride, -(-reach // stride) * stride, net.mirrored_border)


def _pair(value: int | tuple[int, ...]) -> int:
    if isinstance(value, int):
        return value
    if len(set(value)) != 1:
        raise StyleStudioError("only square pools can be tiled")
    return value[0]


@dataclass(frozen=True)
class Span:
    """One tile along one side of the picture, in pixels, [start, stop).

    Attributes:
        core_start, core_stop: what the tile contributes to the losses.
        crop_start, crop_stop: what it runs through the network: the core and its halo.
        length: the picture's side.
    """

    core_start: int
    core_stop: int
    crop_start: int
    crop_stop: int
    length: int

    def picture_positions(self, grid: LayerGrid) -> slice:
        """The core's positions in the whole picture's feature map at a layer on ``grid``."""
        return slice(self.core_start // grid.stride, math.ceil(self.core_stop / grid.stride))

    def positions(self, grid: LayerGrid) -> slice:
        """The core's positions in the crop's feature map at a layer on ``grid``."""
        whole, offset = self.picture_positions(grid), self.crop_start // grid.stride
        return slice(whole.start - offset, whole.stop - offset)

    def input_range(self, border: int) -> tuple[int, int, int, int]:
        """(first pixel, end pixel, mirrored before, mirrored after) of the network's input for this crop.

        Inside the picture, the ``border`` pixels the first convolutions eat
        are real ones; at the picture's edges they are mirrored.
        """
        before = border if self.crop_start == 0 else 0
        after = border if self.crop_stop == self.length else 0
        return self.crop_start - border + before, self.crop_stop + border - after, before, after


def split(length: int, core: int, reach: Reach) -> list[Span]:
    """A side of ``length`` pixels in spans whose cores are at most ``core`` pixels and start on the grid.

    A crop is the core and ``reach.halo`` pixels on each side, cut at the
    picture's edges; one that would end within the border of an edge is
    taken to the edge (the mirrored pixels are the edge's).
    """
    step = max(reach.alignment, core // reach.alignment * reach.alignment)
    count = math.ceil(length / step)
    cuts = sorted(
        {0, length, *(round(i * length / count / reach.alignment) * reach.alignment for i in range(1, count))}
    )
    spans = []
    for start, stop in itertools.pairwise(cuts):
        crop_start = max(start - reach.halo, 0)
        crop_stop = min(stop + reach.halo, length)
        if crop_start < reach.border:
            crop_start = 0
        if length - crop_stop < reach.border:
            crop_stop = length
        spans.append(Span(start, stop, crop_start, crop_stop, length))
    return spans


@dataclass(frozen=True)
class Tile:
    rows: Span
    cols: Span

    def crop(self, picture: Tensor, border: int) -> tuple[Tensor, Sides]:
        """The network's input for this tile (a view of ``picture``), and the sides to mirror."""
        top, bottom, mirror_top, mirror_bottom = self.rows.input_range(border)
        left, right, mirror_left, mirror_right = self.cols.input_range(border)
        return picture[..., top:bottom, left:right], (mirror_top, mirror_bottom, mirror_left, mirror_right)

    def core(self, features: Tensor, grid: LayerGrid) -> Tensor:
        """The core of a crop's feature map at a layer on ``grid``."""
        return features[..., self.rows.positions(grid), self.cols.positions(grid)]


def tiles_for(width: int, height: int, core: int, reach: Reach) -> list[Tile]:
    """Row-major tiles covering a width×height picture, cores at most ``core`` px on a side."""
    return [Tile(rows, cols) for rows in split(height, core, reach) for cols in split(width, core, reach)]


class _StatisticSums:
    """A statistic of a whole picture at each style layer, added up from the tiles' shares.

    Keyed by layer, or by (layer, group) for the style groups' statistics.
    """

    def __init__(self, statistic: Statistic) -> None:
        self.statistic = statistic
        self.sums: dict[Any, list[Tensor]] = {}
        self.counts: dict[Any, tuple[float, int]] = {}

    def add(self, key: Any, core: Tensor, positions: float, mask: Tensor | None = None) -> None:
        """Add the sums over a tile's core (1, C, h, w) (masked, for a group) to ``key``'s.

        ``positions``: the whole map's count (H·W, or Σm² of a group's mask); ``mask``: the group's mask
        values at the core's positions (N, 1), by which ``core`` is multiplied (``Statistic.sums``).
        """
        flat = core[0].flatten(1).t()  # (h·w, C)
        if flat.dtype != torch.bfloat16:  # as ``statistics``: bf16 features are multiplied as they are
            flat = flat.float()
        share = self.statistic.sums(flat, mask)
        self.sums[key] = [a + b for a, b in zip(self.sums[key], share, strict=True)] if key in self.sums else [*share]
        self.counts[key] = (positions, core.shape[1])

    def result(self) -> dict[Any, Values]:
        """key -> the statistic, each part (1, ...) float32, as the untiled tap makes it."""
        return {
            key: tuple(v.unsqueeze(0) for v in self.statistic.normalised(tuple(sums), *self.counts[key]))
            for key, sums in self.sums.items()
        }


class _StyleShare(torch.autograd.Function):
    """A tile's share of a style term, for its backward pass only.

    Its value is 0 (the style terms' values come from the whole picture's
    statistics); its gradient with respect to the tile's features F
    (1, C, h, w) is ``Statistic.backward`` of the loss's gradient with respect
    to the whole picture's statistic: their share of the untiled gradient
    (for the Gram matrix one matrix product, where autograd through
    ⟨dL/dG, F·Fᵀ⟩ / N would take three passes and two copies of F).
    """

    @staticmethod
    def forward(
        ctx: Any,
        features: Tensor,
        statistic: Statistic,
        grads: tuple[Tensor | None, ...],
        scales: tuple[float, ...],
        mask: Tensor | None,
    ) -> Tensor:
        ctx.save_for_backward(features)
        ctx.statistic, ctx.grads, ctx.scales, ctx.mask = statistic, grads, scales, mask
        return features.new_zeros((), dtype=torch.float32)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None, None, None]:
        (features,) = ctx.saved_tensors
        flat = features[0].flatten(1).t()  # (h·w, C)
        grads = [g[0] * grad if g is not None else None for g in ctx.grads]
        share = ctx.statistic.backward(flat, grads, ctx.scales, None, ctx.mask)
        return share.t().reshape(features.shape), None, None, None, None


class TiledObjective(Objective):
    """``Objective``'s loss and gradient, computed tile by tile in bounded memory.

    Args:
        network, inputs, settings, compute: as for ``Objective``.
        tile: the longest side of a tile's core, in pixels (the crop adds
            the halo); the style images' targets are computed in tiles of the same size.
        keep: how many tiles' forward passes the statistics pass keeps for the
            backward pass (the last ones; ``memory.kept_tiles``): each saves a
            forward pass per iteration and holds a tile's graph meanwhile.
    """

    def __init__(
        self,
        network: FeatureNetwork,
        inputs: ScaleInputs,
        settings: Settings,
        compute: Compute,
        tile: int,
        keep: int = 1,
    ) -> None:
        self.tile = tile
        self.keep = max(1, keep)
        super().__init__(network, inputs, settings, compute)

    def _hooked_layers(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        # Every layer's activation: each tile keeps only its core's share.
        return tuple(dict.fromkeys(self.content_layers + self.style_layers)), ()

    def watch(self, layer: str | None) -> None:
        """No style map: the tiles' activations are never whole (see ``Objective.watch``)."""
        self.captured.watched = set()

    @functools.cached_property
    def reach(self) -> Reach:
        return Reach.of(self.net)

    def tiles(self, width: int, height: int) -> list[Tile]:
        return tiles_for(width, height, self.tile, self.reach)

    def _tile_forward(self, image: Tensor, tile: Tile, *, with_grad: bool = False) -> Tensor:
        """Run one tile of ``image`` (1, C, H, W) through the network (the hooks capture it); the crop, a leaf."""
        crop, mirrored = tile.crop(image.detach(), self.reach.border)
        crop = crop.detach().requires_grad_(with_grad)
        with torch.set_grad_enabled(with_grad):
            self._forward(vgg_input(crop), mirrored)
        return crop

    def _tile_features(self, picture: Tensor, tile: Tile, layers: tuple[str, ...]) -> Iterator[tuple[str, Tensor]]:
        """(layer, the core of its activation) for one tile of ``picture`` (1, 3, H, W)."""
        self._tile_forward(picture, tile)
        for name in layers:
            yield name, tile.core(self.captured.activations[name], self.reach.grids[name])

    @torch.no_grad()
    def summarise(self, picture: Tensor) -> tuple[dict[str, Tensor], dict[str, Values]]:
        """The whole picture's content activations and style statistics, a tile at a time."""
        height, width = picture.shape[-2:]
        grids = self.reach.grids
        activations: dict[str, Tensor] = {}
        statistics = _StatisticSums(self.loss.statistic)
        for tile in self.tiles(width, height):
            for name, core in self._tile_features(picture, tile, self._hooked_layers()[0]):
                if name in self.content_layers:
                    if name not in activations:
                        shape = (*core.shape[:2], grids[name].length(height), grids[name].length(width))
                        activations[name] = core.new_zeros(shape)
                    rows, cols = _global_positions(tile, grids[name])
                    activations[name][..., rows, cols] = core
                if name in self.style_layers:
                    statistics.add(name, core, grids[name].length(height) * grids[name].length(width))
            self.captured.clear()
        return activations, statistics.result()

    def _group_cores(
        self, tile: Tile, name: str, height: int, width: int
    ) -> Iterator[tuple[int, Tensor, float, Tensor | None]]:
        """(group, the tile core's features at layer ``name`` weighted by its mask, Σm², the mask at the core's
        positions as (N, 1) or None for all ones) for each style group."""
        grid = self.reach.grids[name]
        core = tile.core(self.captured.activations[name], grid)
        rows, cols = _global_positions(tile, grid)
        for number, group in enumerate(self.groups):
            mask = group.at(grid.length(height), grid.length(width))
            if mask.values is None:
                yield number, core, mask.energy, None
            else:
                values = mask.values[..., rows, cols].to(core.dtype)
                yield number, core * values, mask.energy, values[0, 0].reshape(-1, 1)

    def _statistics_pass(
        self, image: Tensor, *, keep: int
    ) -> Generator[int, None, tuple[dict[tuple[str, int], Values], dict[int, tuple[Tensor, dict[str, Tensor]]]]]:
        """Each style layer's statistic (per style group) of the whole picture; yields the count of tiles done.

        The last ``keep`` tiles run with autograd and their forward passes are
        kept (their crops and the hooks' records) for the backward pass to begin
        with: a tile's forward pass less per iteration for each. Returns the
        statistics, keyed (layer, group), and the kept tiles by index.
        """
        height, width = image.shape[-2:]
        tiles = self.tiles(width, height)
        statistics = _StatisticSums(self.loss.statistic)
        kept: dict[int, tuple[Tensor, dict[str, Tensor]]] = {}
        for done, tile in enumerate(tiles, start=1):
            last = done > len(tiles) - keep
            crop = self._tile_forward(image, tile, with_grad=last)
            with torch.no_grad():
                for name in self.style_layers:
                    for group, masked, positions, mask in self._group_cores(tile, name, height, width):
                        statistics.add((name, group), masked, positions, mask)
            if last:
                kept[done - 1] = (crop, dict(self.captured.activations))
            self.captured.clear()
            yield done
        return statistics.result(), kept

    def evaluate(self, image: Tensor) -> Terms:
        """Loss terms for ``image`` (1, C, H, W), without a gradient."""
        return _last(self._terms(image, None))

    def gradient(self, image: Tensor, loss_scale: LossScale) -> Generator[TileDone, None, Terms]:
        """The loss terms, with their exact gradient added to ``image.grad``: two passes over the tiles.

        Reports each tile of each pass (2 × tiles parts). The hooks on
        ``image`` see the whole gradient once, as after an untiled backward pass.
        """
        return self._terms(image, loss_scale)

    def _terms(self, image: Tensor, loss_scale: LossScale | None) -> Generator[TileDone, None, Terms]:
        backward = loss_scale is not None
        height, width = image.shape[-2:]
        tiles = self.tiles(width, height)
        parts = 2 * len(tiles) if backward else len(tiles)
        statistics_pass = self._statistics_pass(image, keep=self.keep if backward else 0)
        while True:
            try:
                yield TileDone(next(statistics_pass), parts)
            except StopIteration as finished:
                statistics, kept = finished.value
                break
        style, statistic_grads = self._style_terms(statistics, backward)
        scale = loss_scale.value if loss_scale is not None else 1.0
        gradient = torch.zeros_like(image) if backward else None
        content = image.new_zeros((), dtype=torch.float32)
        grids = self.reach.grids
        statistic = self.loss.statistic
        # Last tiles first: their forward passes were kept from the statistics pass.
        for done, (index, tile) in enumerate(reversed(list(enumerate(tiles))), start=len(tiles) + 1):
            if index in kept:
                crop, activations = kept.pop(index)
                self.captured.activations.update(activations)
            else:
                crop = self._tile_forward(image, tile, with_grad=backward)
            with torch.set_grad_enabled(backward):
                tile_content = image.new_zeros((), dtype=torch.float32)
                for name in self.content_layers:
                    core = tile.core(self.captured.activations[name], grids[name])
                    tile_content = tile_content + self.content.tile_share(
                        name, core, *_global_positions(tile, grids[name])
                    )
                if backward:
                    share = tile_content
                    for name in self.style_layers:
                        for group, masked, positions, mask in self._group_cores(tile, name, height, width):
                            scales = tuple(1.0 / d for d in statistic.divisors(positions, masked.shape[1]))
                            grads = statistic_grads[(name, group)]
                            share = share + _StyleShare.apply(masked, statistic, grads, scales, mask)
                    (share * scale).backward()  # type: ignore[no-untyped-call]
            self.captured.clear()
            content = content + tile_content.detach()
            if gradient is not None and crop.grad is not None:
                top, bottom, _, _ = tile.rows.input_range(self.reach.border)
                left, right, _, _ = tile.cols.input_range(self.reach.border)
                gradient[..., top:bottom, left:right] += crop.grad
                yield TileDone(done, parts)
        smooth = image.detach().requires_grad_(backward)
        with torch.set_grad_enabled(backward):
            pictures = {term.name: term(smooth) for term in self.picture_terms}
            if gradient is not None and loss_scale is not None:
                if pictures:
                    (torch.stack(list(pictures.values())).sum() * scale).backward()  # type: ignore[no-untyped-call]
                if smooth.grad is not None:
                    gradient += smooth.grad
                # Once, so that the image's hooks see the whole gradient.
                image.backward(gradient)  # type: ignore[no-untyped-call]
                loss_scale.unscale(image)
        terms = {"content": content, **{name: value.detach() for name, value in pictures.items()}}
        return Terms(torch.stack([*terms.values(), *style.values()]).sum(), terms, style)

    def _style_terms(
        self, statistics: dict[tuple[str, int], Values], backward: bool
    ) -> tuple[dict[str, Tensor], dict[tuple[str, int], tuple[Tensor | None, ...]]]:
        """Each style layer's term from the whole picture's statistics, and (for the backward pass)
        the terms' gradient with respect to each statistic, keyed (layer, group)."""
        leaves = {key: tuple(v.detach().requires_grad_(backward) for v in values) for key, values in statistics.items()}
        with torch.set_grad_enabled(backward):
            style = {
                name: self.style.layer_term(name, [leaves[(name, g)] for g in range(len(self.groups))])
                for name in self.style_layers
            }
        grads: dict[tuple[str, int], tuple[Tensor | None, ...]] = {}
        if backward and style:
            flat = [v for values in leaves.values() for v in values]
            found = iter(torch.autograd.grad(torch.stack(list(style.values())).sum(), flat, allow_unused=True))
            grads = {key: tuple(next(found) for _ in values) for key, values in leaves.items()}
        return {name: term.detach() for name, term in style.items()}, grads


def _global_positions(tile: Tile, grid: LayerGrid) -> tuple[slice, slice]:
    """The tile core's positions in the whole picture's feature map at a layer on ``grid``."""
    return tile.rows.picture_positions(grid), tile.cols.picture_positions(grid)


def _last(generator: Generator[object, None, T]) -> T:
    """Run a reporting generator to its end; its return value."""
    while True:
        try:
            next(generator)
        except StopIteration as finished:
            return finished.value  # type: ignore[no-any-return]
