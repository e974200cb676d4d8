"""One plan for a run: its scales, iterations, tiles, memory and work, worked out before it starts.

The engine runs the plan; the window announces it ("Needs about 2.3 GB, in
tiles of 1024 px, about 4 min"). Both call ``plan_run``, so what the window
says is what the run does. This module imports no torch: the window plans
before the network is loaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ResourceError
from ..io.imageio import fit_size
from ..settings import Settings, scale_sides
from . import memory


@dataclass(frozen=True)
class Target:
    """Where a run computes, as far as its plan is concerned.

    Attributes:
        device_type: "cpu", "cuda" or "mps".
        precision: the precision it computes in ("fp32", "bf16" or "fp16"; never "auto").
        available: bytes of memory free for it, or None when unknown (nothing is refused).
    """

    device_type: str
    precision: str
    available: int | None

    @property
    def where(self) -> str:
        return "computer" if self.device_type == "cpu" else "GPU"

    @property
    def workspace(self) -> int:
        return memory.CUDNN_WORKSPACE_BYTES if self.device_type == "cuda" else 0


@dataclass(frozen=True)
class ScalePlan:
    """One scale of a run.

    Attributes:
        size: (width, height) of the picture at this scale.
        iterations: the optimiser's iterations at this scale.
        tile: the tile core it is evaluated in; None for the whole picture at once.
        bytes: its peak memory.
        iteration_work: an iteration's work in megapixels, a tiled one's at its extra cost.
    """

    size: tuple[int, int]
    iterations: int
    tile: int | None
    bytes: int
    iteration_work: float

    @property
    def work(self) -> float:
        return self.iterations * self.iteration_work


@dataclass(frozen=True)
class RunPlan:
    """What a run will do and need, coarse scale to fine.

    Attributes:
        scales: each scale's plan.
        target: the device and precision it was planned for.
        refusal: why the run cannot start (it does not fit, even in tiles), or None.
    """

    scales: tuple[ScalePlan, ...]
    target: Target
    refusal: str | None = None

    @property
    def sizes(self) -> list[tuple[int, int]]:
        return [scale.size for scale in self.scales]

    @property
    def iterations(self) -> list[int]:
        return [scale.iterations for scale in self.scales]

    @property
    def tile(self) -> int | None:
        """The tile core at the largest scale (None: untiled)."""
        return self.scales[-1].tile

    @property
    def bytes(self) -> int:
        """The run's peak memory: its largest scale's."""
        return max(scale.bytes for scale in self.scales)

    @property
    def work(self) -> float:
        """Megapixel-iterations over the whole run, tiles' extra cost included (times seconds per unit: its time)."""
        return sum(scale.work for scale in self.scales)

    def extended(self, index: int, iterations: int) -> RunPlan:
        """This plan with ``iterations`` more at scale ``index`` (a live change's, to be seen)."""
        scales = list(self.scales)
        scales[index] = dataclasses.replace(scales[index], iterations=scales[index].iterations + iterations)
        return dataclasses.replace(self, scales=tuple(scales))

    def check(self) -> RunPlan:
        """This plan, or ResourceError saying why the run cannot start."""
        if self.refusal is not None:
            raise ResourceError(self.refusal)
        return self


class Schedule:
    """A run's plan as it goes: it grows when a live change near a scale's end is given time to show."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan

    def goes_on(self, index: int, iteration: int, waiting: bool) -> bool:
        """Whether scale ``index`` has an iteration after ``iteration``; the last scale also while a live change
        is ``waiting`` (one made as the run ends is given time too)."""
        return iteration < self.plan.iterations[index] or (index == len(self.plan.scales) - 1 and waiting)

    def give_time(self, index: int, iteration: int, wanted: int) -> bool:
        """Let a change taken at ``iteration`` of scale ``index`` have ``wanted`` iterations at that scale, the
        scale's end moved on as needed; whether it was."""
        wanting = iteration - 1 + wanted - self.plan.iterations[index]
        if wanting <= 0:
            return False
        self.plan = self.plan.extended(index, wanting)
        return True


def scale_sizes(content_size: tuple[int, int], size: int, scales: int, ratio: float = 2.0) -> list[tuple[int, int]]:
    """(width, height) of each scale, coarse to fine (``settings.scale_sides``); the last is the requested size."""
    return [fit_size(*content_size, side) for side in scale_sides(size, scales, ratio)]


def plan_run(
    settings: Settings, content_size: tuple[int, int], style_sizes: Sequence[tuple[int, int]], target: Target
) -> RunPlan:
    """The plan of a run of ``settings`` on a photo of ``content_size`` with styles of ``style_sizes`` (as given).

    A scale is tiled when ``settings.tile`` asks or when it would not fit
    whole; a run whose largest scale does not fit even in tiles has a
    ``refusal`` and is not started.
    """
    sizes = scale_sizes(content_size, settings.size, settings.scale_count(), settings.scale_ratio)
    iterations = settings.iterations_per_scale(len(sizes))
    scales, refusal = [], None
    for (width, height), count in zip(sizes, iterations, strict=True):
        side = max(width, height)
        longest = settings.style_side(max(width, height))
        styles = [fit_size(*size, longest) for size in style_sizes]
        try:
            tile = memory.plan_tiles(
                content_size, side, styles, target.precision, target.available, target.where,
                settings.optimizer, tile=settings.tile, workspace=target.workspace,
            )  # fmt: skip
        except ResourceError as exc:
            tile, refusal = (settings.tile or memory.TILE_SIDES[-1]), str(exc)
        if tile is None:
            need = memory.estimate_bytes(width, height, styles, target.precision, settings.optimizer)
        else:
            need = memory.tiled_bytes(width, height, tile, target.precision, settings.optimizer)
        work = memory.iteration_work(width, height, tile)
        scales.append(ScalePlan((width, height), count, tile, need + target.workspace, work))
    return RunPlan(tuple(scales), target, refusal)
