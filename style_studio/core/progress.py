"""What a run reports: frozen ``Progress`` records, free of torch.

The engine yields them; the command line prints them, the window shows them
and the tests assert on them. This module imports neither torch nor Qt, so
every consumer can name the type.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, TypeAlias

import numpy as np

from .errors import StyleStudioError


class Why(StrEnum):
    """Why something stopped before its end (``Stopped.why``)."""

    #: Its cancel token was set: the user's Stop or Cancel, Ctrl+C, a paused queue, the window closing.
    CANCELLED = "cancelled"
    #: It never ran: the batch it was in stopped first.
    NOT_RUN = "not run"


@dataclass(frozen=True)
class Finished:
    """It did all it was asked to.

    Attributes:
        made_before: it had nothing to do: its output was made before, with the same job key (a batch's job or a
            queued one skipped).
    """

    made_before: bool = False

    @property
    def word(self) -> str:
        """The word ``--progress json`` and kept results say: "finished"."""
        return "finished"


@dataclass(frozen=True)
class Stopped:
    """It was stopped before its end, and why."""

    why: Why = Why.CANCELLED

    @property
    def word(self) -> str:
        """The word ``--progress json``, kept results, the queue and a batch's summary say: "cancelled"."""
        return "cancelled"


@dataclass(frozen=True)
class Failed:
    """An error ended it.

    Attributes:
        error: the error as the user is told it.
        exception: the exception itself, where one was caught in this process (to raise again); None otherwise
            (read back from a file, sent back by a worker).
    """

    error: str
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, exc: BaseException) -> Failed:
        """The outcome of ``exc``, said as its message (or its type's name, when it has none)."""
        return cls(str(exc) or type(exc).__name__, exc)

    def raised(self) -> BaseException:
        """The exception to raise for it: the one caught, or one that says the error."""
        return self.exception or StyleStudioError(self.error)

    @property
    def word(self) -> str:
        """The word kept results, the queue and a batch's summary say: "failed"."""
        return "failed"


#: How a run, a job, a queue item or a batch's entry ended: one of three, matched with ``match``.
Outcome: TypeAlias = Finished | Stopped | Failed
#: How a run's records can end: a failure is raised, not recorded.
RunEnd: TypeAlias = Finished | Stopped

FINISHED: Final = Finished()
CANCELLED: Final = Stopped(Why.CANCELLED)


def read_outcome(word: object) -> Outcome:
    """The outcome a kept document names by its word; one it does not know (or none) counts as stopped early."""
    if word == "finished":
        return FINISHED
    if word == "failed":
        return Failed("")
    return CANCELLED


@dataclass(frozen=True)
class Losses:
    """The weighted loss terms of one evaluation, as numbers.

    Attributes:
        total: the sum of the terms.
        terms: the content term and each term of the picture itself ("tv", in a video's frame "temporal"), by name.
        style: style layer -> its term.
        grad_norm: L2 norm of the total's gradient with respect to the image.
    """

    total: float
    terms: Mapping[str, float]
    style: Mapping[str, float]
    grad_norm: float

    @property
    def content(self) -> float:
        return self.terms.get("content", math.nan)

    @property
    def tv(self) -> float:
        return self.terms.get("tv", math.nan)

    @property
    def temporal(self) -> float:
        """The temporal term; 0 where there is none (outside videos, a clip's first frame)."""
        return self.terms.get("temporal", 0.0)


NO_LOSSES: Final = Losses(math.nan, {}, {}, math.nan)


@dataclass(frozen=True)
class Progress:
    """One iteration of a run, or its end (``done``).

    Loss values are the weighted terms that make up ``total_loss``.

    Attributes:
        scale, scales: 1-based scale index and the number of scales.
        iteration, iterations: 1-based iteration within the scale, and its total; iteration 0 is the start
            picture's record (its preview is the picture the run starts from; it has no losses yet).
        step, steps: iteration counted over all scales, and their total.
        width, height: image size at this scale, pixels.
        total_loss: the sum of the terms.
        terms: the content term and each term of the picture itself, weighted, by name (``Losses.terms``).
        style_losses: style layer -> its weighted term.
        grad_norm: L2 norm of the loss gradient w.r.t. the image.
        elapsed: seconds since the run started.
        eta: estimated seconds to the end, None until known.
        weights: which VGG weights are in use ("untrained ..." when untrained).
        compute: device and precision, e.g. "cpu, bf16".
        preview: (H, W, 3) uint8 downsampled image, at most every preview interval.
        style_map: with a preview, when asked for (``StyleTransfer.set_style_map``): (h, w)
            float32 in [0, 1] at the preview's size, where the picture is furthest
            from the style at the chosen layer (see ``Objective.style_map``).
        event: something that happened (e.g. a recovered blow-up), else None.
        done: this is the last record of the run. Its loss values and
            ``grad_norm`` are the result's (the lowest-loss image of the last
            scale reached), which need not be the last iteration's.
        outcome: with ``done``: ``FINISHED``, or ``Stopped`` and why (``--progress json`` says its word as
            ``stop_reason``).
        part, parts: in a record from within an iteration (a tiled one), the
            parts of the iteration done and their number; 0 and 0 in a record
            of a whole iteration. Its losses are the previous iteration's and
            ``step`` counts the iterations done before it.
    """

    scale: int
    scales: int
    iteration: int
    iterations: int
    step: int
    steps: int
    width: int
    height: int
    total_loss: float
    terms: Mapping[str, float]
    style_losses: Mapping[str, float]
    grad_norm: float
    elapsed: float
    eta: float | None
    weights: str
    compute: str
    preview: np.ndarray | None = field(default=None, repr=False, compare=False)
    style_map: np.ndarray | None = field(default=None, repr=False, compare=False)
    event: str | None = None
    done: bool = False
    outcome: RunEnd | None = None
    part: int = 0
    parts: int = 0

    @property
    def start(self) -> bool:
        """The start picture's record, before any iteration (iteration 0, no losses yet)."""
        return self.iteration == 0 and not self.done

    @property
    def within_iteration(self) -> bool:
        """A record from within an iteration, not of a whole one."""
        return self.parts > 0

    @property
    def steps_done(self) -> float:
        """Iterations done over all scales, counting the part of the current one."""
        return self.step + self.part / self.parts if self.parts else float(self.step)

    @property
    def losses(self) -> Losses:
        return Losses(self.total_loss, self.terms, self.style_losses, self.grad_norm)

    @property
    def content_loss(self) -> float:
        return self.losses.content

    @property
    def tv_loss(self) -> float:
        return self.losses.tv

    @property
    def temporal_loss(self) -> float:
        """In a video's frame, the weighted temporal term (part of ``total_loss``); else 0."""
        return self.losses.temporal

    def loss_curves(self) -> dict[str, float]:
        """Every term by the name the loss plot gives it: total, the content and picture terms, each style layer."""
        return {"total": self.total_loss, **self.terms, **self.style_losses}

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-able data, without the preview; non-finite numbers become null.

        Its shape is pinned (scripts parse it): the content and total-variation
        terms as ``content_loss`` and ``tv_loss``; a video's frame records add
        ``temporal_loss`` (``FrameRecord.to_json``).
        """
        fields = {k: v for k, v in dataclasses.asdict(self).items() if k not in ("preview", "style_map", "terms")}
        losses = {
            "total_loss": self.total_loss,
            "content_loss": self.content_loss,
            "style_losses": {k: _finite_or_none(v) for k, v in self.style_losses.items()},
            "tv_loss": self.tv_loss,
            "grad_norm": self.grad_norm,
        }
        out: dict[str, Any] = {}
        for key, value in fields.items():
            if key == "total_loss":
                out |= losses
            elif key == "outcome":  # the name and the words scripts have always parsed
                out["stop_reason"] = self.outcome.word if self.outcome is not None else None
            elif key not in losses:
                out[key] = value
        for key in ("total_loss", "content_loss", "tv_loss", "grad_norm", "eta"):
            out[key] = _finite_or_none(out[key])
        return out


@dataclass(frozen=True)
class TuningProgress:
    """A step of the look being tuned to the painting before many pictures are painted with it: a batch's photos
    in one painting, or a clip's frames (``jobs.look``). A single picture's tuning is in its run's records.

    Attributes:
        step, steps: 1-based step done (counting those a stopped tuning kept), and how many there are.
        loss: the step's tuning loss.
        photos: how many photos (or frames) the look learns from.
        elapsed: seconds since the tuning began.
        event: what the user should know (the first step says what is tuned), else None.
    """

    step: int
    steps: int
    loss: float
    photos: int
    elapsed: float
    event: str | None = None

    def to_json(self) -> dict[str, Any]:
        """As ``--progress json`` prints it: ``"tuning": true`` tells it from a run's record."""
        return {"tuning": True, "step": self.step, "steps": self.steps, "loss": _finite_or_none(self.loss),
                "photos": self.photos, "elapsed": round(self.elapsed, 3), "event": self.event}  # fmt: skip


class TimeLeft:
    """Seconds left in a run of several scales, from the pace of the scale it is at.

    Work is counted in units the caller makes equally slow at every scale (the
    engine: pixel-iterations, a tiled scale's weighted by its extra cost), so the
    scales still to come are foreseen at the pace measured last. A scale's pace is
    measured from its own first record: the set-up before it (the network, the
    style targets at its size) would make it far too slow, and a whole run's
    average pace would take a slow last scale for as fast as the earlier ones.
    Until a scale has its second record, the pace of the scale before stands.
    """

    def __init__(self, total_work: float) -> None:
        self.total_work = total_work
        self._origin: tuple[int, float, float] | None = None  # scale, time, work done at its first record
        self._pace: float | None = None  # work per second

    def __call__(self, now: float, scale: int, work_done: float) -> float | None:
        """Seconds left at time ``now`` with ``work_done`` at ``scale``; None until a pace is known."""
        if self._origin is None or self._origin[0] != scale:
            self._origin = (scale, now, work_done)
        else:
            _, since, work_since = self._origin
            if work_done > work_since and now > since:
                self._pace = (work_done - work_since) / (now - since)
        if self._pace is None:
            return None
        return max(0.0, self.total_work - work_done) / self._pace


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
