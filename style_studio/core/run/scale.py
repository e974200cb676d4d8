"""One scale's optimisation: its picture, objective, optimiser and step control, and the step they take together.

An iteration reads as the paper's loop (and crowsonkb's): a closure that zeroes the gradient, evaluates the loss
and its gradient and returns the loss, handed to the optimiser's ``step``; then step control judges it. Around it
the engine (``engine.StyleTransfer``) takes live changes, records and saves.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from types import TracebackType

import torch
from torch import Tensor

from ..network.device import Compute
from ..objective.guided import ScaleRegions
from ..objective.inputs import ScaleInputs
from ..objective.loss_scale import LossScale
from ..objective.objective import Objective, Terms, TileDone
from ..objective.regions import Regions
from ..progress import Losses
from ..settings import Settings
from .checkpoints import Checkpoint
from .image_hooks import GradientNorm, KeepPhoto, record_projected_step
from .lbfgs import LBFGS, new_optimizer
from .live import Steering, repainted, reweighted
from .steps import Kept, StepControl, Undone, Verdict, WentBack

#: With ``Settings.average``, a scale's picture is the average of about its last 1/AVERAGED_SHARE iterations.
AVERAGED_SHARE = 5

#: Makes the objective of a scale's pictures under settings (whole or in tiles, as the run's plan says).
Objectives = Callable[[ScaleInputs, Settings], Objective]


@dataclass
class Standing:
    """Where a run stands between iterations, as its result and its checkpoints read it.

    Attributes:
        control: the step control of the scale under way, or the last one (its kept picture, its lowest loss).
        optimizer: that scale's optimiser (L-BFGS's step scale goes into checkpoints).
        position: the last iteration done: (scale index, iteration, its picture).
        kept: the result outside an optimisation: the start picture of a run that optimises nothing, or the
            result kept on the CPU after the device ran out of memory.
    """

    control: StepControl | None = None
    optimizer: torch.optim.Optimizer | None = None
    position: tuple[int, int, Tensor] | None = None
    kept: Tensor | None = None

    @property
    def picture(self) -> Tensor | None:
        """The picture the run would end with now (None before there is one)."""
        return self.control.kept if self.control is not None else self.kept

    def keep_on_cpu(self) -> None:
        """Keep only the result, on the CPU: the device's memory can then be given back."""
        if self.control is not None:
            self.kept = self.control.kept.cpu()
        self.control = self.optimizer = self.position = None


class Evaluation:
    """One evaluation of the loss and its gradient, in parts: iterate it for each part done (a tiled objective's
    tiles; none for a whole one), or call ``closure`` for the loss.

    The parts are handed out rather than recorded here so that the run's records of them reach its consumers as
    each tile is done (the window shows "part 3/8", a stop lands within a tile); ``closure`` finishes what is left.
    """

    def __init__(self, parts: Generator[TileDone, None, Terms]) -> None:
        self._parts = parts
        self._terms: Terms | None = None

    def __iter__(self) -> Iterator[TileDone]:
        while self._terms is None:
            try:
                yield next(self._parts)
            except StopIteration as finished:
                self._terms = finished.value

    def closure(self) -> Tensor:
        """The loss (its gradient in the picture's ``grad``), evaluated to its end."""
        return self.terms.total

    @property
    def terms(self) -> Terms:
        """The terms evaluated, once every part is done."""
        for _ in self:
            pass
        if self._terms is None:  # the objective's generator ended without its terms
            raise RuntimeError("an evaluation ended without its loss terms")
        return self._terms


class ScaleRun:
    """One scale's optimisation as it stands between iterations: what live changes and step verdicts replace.

    A context manager: the hooks on the picture and the objective's on the network are removed however it ends.

    Args:
        start: the picture the scale starts from, (1, C, H, W), at ``inputs.size``.
        inputs: the scale's pictures; settings: the run's, as they stand.
        objectives: makes the scale's objective (again after a live change).
        iterations: the scale's iterations as planned (how many an average is over).
        standing: where the run stands; the scale's step control and optimiser are kept there.
        resumed: the checkpoint this scale goes on from (its iterations done, its lowest-loss picture).
    """

    def __init__(
        self,
        start: Tensor,
        inputs: ScaleInputs,
        settings: Settings,
        objectives: Objectives,
        iterations: int,
        compute: Compute,
        standing: Standing,
        resumed: Checkpoint | None = None,
    ) -> None:
        self.inputs, self.objectives, self.compute, self.standing = inputs, objectives, compute, standing
        self.kind = settings.optimizer
        # The photo where the regions keep it: an upscaled coarse scale would blur it.
        start = inputs.regions.kept_photo(start.detach(), inputs.content)
        # L-BFGS flattens the gradient with view(-1): the image must be NCHW-contiguous.
        self.image = start.clone(memory_format=torch.contiguous_format).requires_grad_(True)
        average_over = max(2, iterations // AVERAGED_SHARE) if settings.average else 0
        self.control = StepControl(self.image, settings.optimizer, settings.effective_step, average_over)
        standing.control = self.control
        #: The first iteration to run (after a resumed one's last).
        self.first = 1
        self._resumed = resumed
        if resumed is not None:
            self.control.resume(resumed.lowest.to(self.image.device), resumed.best)
            self.first = resumed.position.iteration + 1
        self.loss_scale = LossScale(compute.precision == "fp16")
        #: The objective and layer the style map was last asked of (asked again when either changes).
        self._watching: tuple[Objective, str | None] | None = None

    def begin(self, settings: Settings) -> ScaleRun:
        """Make the optimiser, the hooks on the picture and the objective; for a ``with`` block."""
        resumed = self._resumed
        self.optimizer = self._restarted(self.control.step_size, resumed.step_scale if resumed is not None else None)
        self.keep_photo = KeepPhoto(self.image, self.inputs.regions.keep)  # first: the norm sees kept pixels left out
        self.gradient_norm = GradientNorm(self.image)  # sees the scaled gradient
        self.objective = self.objectives(self.inputs, settings)
        return self

    def __enter__(self) -> ScaleRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.gradient_norm.remove()
        self.keep_photo.remove()
        self.objective.close()

    def _restarted(self, step_size: float, step_scale: float | None = None) -> torch.optim.Optimizer:
        """A new optimiser (its history forgotten) at ``step_size``, kept where the run stands."""
        self.standing.optimizer = optimizer = new_optimizer(self.kind, self.image, step_size, step_scale)
        return optimizer

    # -- the step ------------------------------------------------------------------------

    def evaluation(self, style_map_layer: str | None) -> Evaluation:
        """The loss and its gradient at the picture as it stands (the gradient zeroed first), in parts; the style
        map of ``style_map_layer`` made with it."""
        self.control.before_step(self.image)
        self.optimizer.zero_grad(set_to_none=False)
        if self._watching != (self.objective, style_map_layer):
            self.objective.watch(style_map_layer)
            self._watching = (self.objective, style_map_layer)
        return Evaluation(self.objective.gradient(self.image, self.loss_scale))

    def step(self, closure: Callable[[], Tensor]) -> None:
        """The optimiser's step from the loss and gradient ``closure`` gives, projected back into [0, 1]."""
        # torch types a closure's loss as a float; its optimisers take the tensor (reading it back would wait).
        self.optimizer.step(closure)  # type: ignore[arg-type]
        with torch.no_grad():
            # A projected step: the loss reported is then that of the image the user gets. Left free, pixels drift
            # outside [0, 1] and are clipped on export.
            self.image.clamp_(0, 1)
            if isinstance(self.optimizer, LBFGS):
                record_projected_step(self.optimizer, self.image, self.control.step_origin)

    def losses(self, terms: Terms) -> Losses:
        """The terms evaluated, as numbers, with the gradient's norm as the optimiser got it."""
        return terms.losses(self.loss_scale.unscaled(self.gradient_norm.value))

    def judge(self, losses: Losses, iteration: int) -> Verdict:
        """Step control's verdict on the step: the optimiser made again after a blow-up or an overflow, its step
        raised after good ones."""
        finite = math.isfinite(losses.grad_norm)
        verdict = self.control.judge(losses.total, self.image, iteration, gradient_finite=finite)
        self.loss_scale.update(finite)
        match verdict:
            case WentBack() | Undone():
                self.optimizer = self._restarted(verdict.step_size)
            case Kept(step_raised=True):
                self.optimizer.param_groups[0]["lr"] = verdict.step_size  # in place: the history stays
        return verdict

    # -- live changes ---------------------------------------------------------------------

    def take(self, steering: Steering) -> bool:
        """Take the changes made since the last iteration (loss weights, then regions); whether there were any."""
        reweighed = steering.reweighed()
        if reweighed:
            self.reweigh(steering.settings)
        repainted = steering.repainted()
        if repainted:
            self.repaint(steering.regions, steering.settings)
        return reweighed or repainted

    def reweigh(self, settings: Settings) -> None:
        """New loss weights: the objective is made again for them, and the optimiser with it where its history no
        longer describes the loss."""
        rebuilt = functools.partial(self.objectives, self.inputs, settings)
        self.objective, restart = reweighted(self.objective, settings, rebuilt)
        self.control.new_objective()
        if restart:
            self.optimizer = self._restarted(self.control.step_size)

    def repaint(self, regions: Regions | None, settings: Settings) -> None:
        """New regions: the objective regrouped or made again, the photo kept where they keep it, the optimiser
        restarted."""
        painted = ScaleRegions.prepare(regions, self.inputs.size, self.compute.device)
        self.inputs = dataclasses.replace(self.inputs, regions=painted)
        rebuilt = functools.partial(self.objectives, self.inputs, settings)
        self.objective = repainted(self.objective, painted, settings, rebuilt)
        self.keep_photo.take(painted.keep)
        with torch.no_grad():
            self.image.copy_(painted.kept_photo(self.image, self.inputs.content))
        self.control.new_objective()
        self.optimizer = self._restarted(self.control.step_size)


__all__ = ["AVERAGED_SHARE", "Evaluation", "Objectives", "ScaleRun", "Standing"]
