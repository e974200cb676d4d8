"""A run's bookkeeping between iterations: steps, work done, time left, the last record; and the records it yields."""

from __future__ import annotations

import math
import time

import numpy as np

from ..progress import NO_LOSSES, Losses, Progress, RunEnd, TimeLeft
from .checkpoints import Position
from .plan import RunPlan


class RunRecords:
    """Makes a run's ``Progress`` records, and keeps what they count: the one place a record is made.

    Args:
        plan: the run's plan (sizes, iterations, each iteration's work).
        weights: the weights' label; compute: the device and precision, as records name them.
        preview_interval: seconds between previews.
        resumed: where a resumed run stood; its steps, time and work count as done.
    """

    def __init__(
        self, plan: RunPlan, weights: str, compute: str, preview_interval: float, resumed: Position | None = None
    ) -> None:
        self.plan, self.weights, self.compute, self.preview_interval = plan, weights, compute, preview_interval
        self.started = time.perf_counter()
        self.step = 0
        self.work_done = 0.0
        self.last: Progress | None = None
        #: The losses of the lowest-loss image so far: the last record's.
        self.result_losses: Losses | None = None
        self._last_preview = -math.inf
        if resumed is not None:
            self.step = resumed.step
            self.started -= resumed.elapsed
            self.work_done = sum(scale.work for scale in plan.scales[: resumed.scale])
            self.work_done += resumed.iteration * plan.scales[resumed.scale].iteration_work
        self._time_left = TimeLeft(plan.work)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def replan(self, plan: RunPlan) -> None:
        """The run's plan grew (more iterations at a scale): records count and foresee it."""
        self.plan = plan
        self._time_left.total_work = plan.work

    def iteration_done(self, index: int) -> None:
        self.step += 1
        self.work_done += self.plan.scales[index].iteration_work

    def preview_due(self, force: bool) -> bool:
        return force or time.perf_counter() - self._last_preview >= self.preview_interval

    def record(
        self,
        index: int,
        iteration: int,
        size: tuple[int, int],
        losses: Losses,
        *,
        pictures: tuple[np.ndarray, np.ndarray | None] | None = None,
        event: str | None = None,
        stop_reason: RunEnd | None = None,
        part: tuple[int, int] | None = None,
    ) -> Progress:
        """A record at scale ``index``; ``stop_reason`` makes it the run's last, ``part`` (done, parts) one from
        within an iteration; ``iteration`` 0 the start picture's, before any (no losses, no time left yet).
        ``pictures``: its preview and style map."""
        now = time.perf_counter()
        done = stop_reason is not None
        if pictures is not None:
            self._last_preview = now
        iterations = self.plan.iterations
        record = Progress(
            scale=index + 1,
            scales=len(iterations),
            iteration=iteration,
            iterations=iterations[index],
            step=self.step,
            steps=sum(iterations),
            width=size[0],
            height=size[1],
            total_loss=losses.total,
            terms=losses.terms,
            style_losses=losses.style,
            grad_norm=losses.grad_norm,
            elapsed=now - self.started,
            eta=0.0 if done else None if iteration == 0 else self._eta(now, index, part),
            weights=self.weights,
            compute=self.compute,
            preview=pictures[0] if pictures is not None else None,
            style_map=pictures[1] if pictures is not None else None,
            event=event,
            done=done,
            outcome=stop_reason,
            part=part[0] if part is not None else 0,
            parts=part[1] if part is not None else 0,
        )
        if not done and part is None:
            self.last = record
        return record

    def last_losses(self) -> Losses:
        return self.last.losses if self.last is not None else NO_LOSSES

    def _eta(self, now: float, index: int, part: tuple[int, int] | None) -> float | None:
        within = self.plan.scales[index].iteration_work * part[0] / part[1] if part is not None else 0
        return self._time_left(now, index, self.work_done + within)
