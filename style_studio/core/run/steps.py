"""Step control: which steps stand, how large the next may be, and which image is kept.

After each iteration the loop tells ``StepControl`` the loss of the image the
iteration started from. A loss that is non-finite or ``DIVERGENCE_FACTOR``
times the best one is a blow-up: the image goes back to the lowest-loss one,
the step size is divided, and the optimiser restarts. After
``STEP_RECOVERY`` good iterations in a row a lowered step is doubled again,
in place. The lowest-loss image is what the run returns, not the last one;
with averaging, it is a moving average of the iterates (``StepControl.kept``).
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass
from typing import ClassVar, Final, TypeAlias

import torch
from torch import Tensor

from ..errors import StyleStudioError

log = logging.getLogger(__name__)

#: A loss this many times the best one since the last change of objective is a blow-up.
DIVERGENCE_FACTOR: Final = 10.0
#: Each blow-up divides the step size by this. L-BFGS overshoots now and then in
#: its first steps and recovers well with its history reset; Adam only blows up
#: when its step is far too large.
STEP_BACKOFF: Final = {"lbfgs": 2.0, "adam": 10.0}
#: Good iterations in a row after which a lowered step size is doubled (up to
#: the one set): an early blow-up would otherwise slow all the rest of the run
#: (benchmarks/precision.py shows it on fp32 runs with untrained weights).
STEP_RECOVERY: Final = 10
#: Blow-ups in a row after which the run stops.
MAX_BLOWUPS: Final = 6


@dataclass(frozen=True)
class Kept:
    """The step stands.

    Attributes:
        improved: the iteration's image is the new lowest-loss one.
        step_size: the step size from now on.
        step_raised: a lowered step size was raised; the optimiser keeps its history.
    """

    improved: bool
    step_size: float
    step_raised: bool = False
    event: ClassVar[None] = None


@dataclass(frozen=True)
class WentBack:
    """A blow-up: the image is back at the lowest-loss one, and the optimiser must restart at ``step_size``.

    Attributes:
        event: what happened, a sentence for the user.
    """

    step_size: float
    event: str
    improved: ClassVar[bool] = False


@dataclass(frozen=True)
class Undone:
    """The gradient was not finite (fp16): the step taken is undone (the image is back where it started) and the
    optimiser must restart at ``step_size``; the loss of the image it started from still counts (``improved``)."""

    improved: bool
    step_size: float
    event: ClassVar[None] = None


#: What ``StepControl.judge`` decided about one iteration; each says whether it improved, and any event.
Verdict: TypeAlias = Kept | WentBack | Undone


class StepControl:
    """Judges each iteration's loss and keeps the lowest-loss image.

    Use: ``before_step(image)`` before the optimiser moves the image, then
    ``judge(loss, image)`` with the loss of the image ``before_step`` saw.

    Args:
        start: the image the scale starts from, (1, C, H, W).
        optimizer: "lbfgs" or "adam" (how far a blow-up lowers the step).
        step_size: the step size set; never exceeded.
        average_over: keep a moving average of the iterates over about this many iterations (an exponential
            one, bias-corrected, as Polyak averaging's practical form); 0: keep the lowest-loss image.
    """

    def __init__(self, start: Tensor, optimizer: str, step_size: float, average_over: int = 0) -> None:
        self.lowest = start.detach().clone()
        self._decay = 1.0 - 1.0 / average_over if average_over > 1 else 0.0
        self._sum: Tensor | None = None
        self._weight = 0.0
        self._candidate = torch.empty_like(self.lowest)
        self.set_step_size = step_size
        self.step_size = step_size
        self._backoff = STEP_BACKOFF[optimizer]
        self.best = math.inf  # the lowest image's loss
        self._blowups = 0
        self._good_run = 0
        self._judged_finite = False  # whether any image of this scale has had a finite loss

    @property
    def kept(self) -> Tensor:
        """The picture the scale keeps: the iterates' average when averaging (once there is one), else the
        lowest-loss image."""
        if self._sum is None:
            return self.lowest
        return self._sum / self._weight

    def _average(self, image: Tensor) -> None:
        """Add an iterate to the average (called under ``judge``'s no_grad, only when averaging)."""
        if self._sum is None:
            self._sum = torch.zeros_like(self.lowest)
        self._sum.mul_(self._decay).add_(image.detach(), alpha=1.0 - self._decay)
        self._weight = self._weight * self._decay + (1.0 - self._decay)

    def resume(self, lowest: Tensor, best: float) -> None:
        """Go on from a checkpoint's lowest-loss image and its loss."""
        self.lowest, self.best = lowest, best
        self._judged_finite = math.isfinite(best)

    def new_objective(self) -> None:
        """The loss changed meaning (new weights): past losses are no yardstick for a blow-up."""
        self.best = math.inf

    def before_step(self, image: Tensor) -> None:
        self._candidate.copy_(image.detach())

    @property
    def step_origin(self) -> Tensor:
        """The image ``before_step`` saw (until ``judge``)."""
        return self._candidate

    @torch.no_grad()
    def judge(self, loss: float, image: Tensor, iteration: int, *, gradient_finite: bool = True) -> Verdict:
        """Decide about the step just taken from the image ``before_step`` saw, whose loss is ``loss``.

        ``gradient_finite``: False when that image's gradient overflowed (fp16):
        its loss still counts, but the step taken from it is undone.

        Raises:
            StyleStudioError: the run blew up ``MAX_BLOWUPS`` times in a row.
        """
        if not math.isfinite(loss) and not self._judged_finite:
            # No image of this scale had a finite loss: there is none to go back to, and a smaller step cannot help.
            raise StyleStudioError(
                f"the loss is not finite ({loss}) from the picture the run starts from: the weights are too large "
                "for the arithmetic; lower the style, content or smoothing weight or a style layer's"
            )
        if not math.isfinite(loss) or loss > DIVERGENCE_FACTOR * self.best:
            return self._back_off(loss, image, iteration)
        self._judged_finite = True
        if not gradient_finite:
            image.copy_(self._candidate)
        self._blowups = 0
        self._good_run += 1
        raised = self.step_size < self.set_step_size and self._good_run >= STEP_RECOVERY
        if raised:
            self.step_size = min(self.set_step_size, self.step_size * 2)
            self._good_run = 0
        improved = loss < self.best
        if improved:
            self.best = loss
            self.lowest, self._candidate = self._candidate, self.lowest
        if self._decay:
            self._average(image)
        return Kept(improved, self.step_size, raised) if gradient_finite else Undone(improved, self.step_size)

    def _back_off(self, loss: float, image: Tensor, iteration: int) -> Verdict:
        self._blowups += 1
        self._good_run = 0
        self.step_size /= self._backoff
        image.copy_(self.lowest)
        what = "became non-finite" if not math.isfinite(loss) else "jumped"
        event = (
            f"the loss {what} at iteration {iteration}: went back to the lowest-loss image "
            f"and lowered the step size to {self.step_size:.3g}"
        )
        log.warning(event)
        if self._blowups >= MAX_BLOWUPS:
            raise StyleStudioError(
                f"the optimisation kept diverging ({self._blowups} times in a row, last step size "
                f"{self.step_size:.3g}); lower the step size or the style weight, or use L-BFGS"
            )
        return WentBack(self.step_size, event)


class Settle:
    """Says when a scale's loss has stopped improving, so that a frame that starts close to its end stops early.

    Settled: after ``floor`` iterations, the lowest loss fell by no more than ``share`` of itself over the
    last ``over`` iterations. A share of 0 never settles (every iteration runs).
    """

    def __init__(self, share: float, floor: int = 10, over: int = 10) -> None:
        self.share, self.floor = share, max(floor, over)
        self._lowest: deque[float] = deque(maxlen=over + 1)  # the last ``over`` iterations' and the one before
        self._seen = 0

    def settled(self, lowest: float) -> bool:
        """Take the iteration's lowest loss so far; whether the scale can stop here."""
        self._lowest.append(lowest)
        self._seen += 1
        if self.share <= 0 or self._seen <= self.floor:
            return False
        before = self._lowest[0]
        return math.isfinite(before) and math.isfinite(lowest) and before - lowest <= self.share * abs(before)
