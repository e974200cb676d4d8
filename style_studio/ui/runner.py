"""Running the engine off the GUI thread.

One run is one ``BackgroundTask`` (``background.py``) whose function is a ``RenderSession``:
it loads the weights, iterates the engine's generator and reports each
``Progress``. Previews go through a one-slot mailbox: the session builds a
``QImage`` (a copy that owns its pixels), drops it in the slot and reports
``PREVIEW_READY`` only when the slot was empty, so the GUI thread always takes
the latest frame and never a backlog. Stopping is the job's cancel token,
which the engine checks every iteration.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias

from PySide6.QtCore import QObject, QThread, Signal, Slot
from PySide6.QtGui import QImage

from ..core import (
    CANCELLED,
    Cancelled,
    CancelToken,
    Failed,
    LiveChanges,
    Outcome,
    PictureResult,
    Previews,
    Progress,
    Regions,
    RunHooks,
    RunPlan,
    RunSpec,
    Settings,
    SettingsError,
    Stopped,
    StyleStudioError,
    WeightsCache,
)
from ..core import settings as settings_mod
from .background import BackgroundTask, Report, TaskOutcome
from .qt_images import array_to_qimage
from .state import RunStatus, WindowState

if TYPE_CHECKING:
    from ..core import CheckpointStore, PreviewFolder

log = logging.getLogger(__name__)

#: The owners of runs: the user's own, and the render queue's.
USER: Final = "user"
QUEUE: Final = "queue"


@dataclass(frozen=True)
class PreviewReady:
    """A session's report that a preview waits in its mailbox: the GUI thread takes the newest (``take_preview``)."""


PREVIEW_READY: Final = PreviewReady()

#: What a run's session reports to the GUI thread: its plan once set up, each record, a preview waiting.
RunReport: TypeAlias = RunPlan | Progress | PreviewReady


@dataclass(frozen=True)
class RunRequest:
    """A run the window asks for: what it makes (the run's own ``RunSpec``, as every other surface gives it; its
    weights are named in its settings) and who asked and where its previews go."""

    spec: RunSpec
    #: Whose run it is: the user's (``USER``) or the queue's (``QUEUE``); each listens to its own.
    owner: str = "user"
    #: Where the run keeps its previews as it makes them (a timelapse); None: nowhere.
    previews: PreviewFolder | None = None


def _lower_this_threads_priority() -> None:
    """Run the optimisation at a lower CPU priority than the window.

    The engine keeps every core busy; at equal priority the GUI thread waits
    for a time slice behind torch's worker threads. Threads torch starts from
    here inherit the lower priority. Lowering one's own priority needs no privileges.
    """
    if hasattr(os, "setpriority"):
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + 5)
        except OSError:
            pass
    thread = QThread.currentThread()
    if thread is not None:
        thread.setPriority(QThread.Priority.LowPriority)


class RenderSession:
    """One run's work, done in its job's thread; previews cross threads here, live changes through ``live``.

    ``live`` is made with the session, so the window's changes (weights, regions, the style map) go to the run's
    own inbox from the start, before the run is set up as after: there is nothing to hold back and hand over.
    """

    def __init__(self, job: RunRequest, weights: WeightsCache, checkpoints: CheckpointStore | None = None) -> None:
        self.job = job
        self._weights = weights
        self._checkpoints = checkpoints
        spec = job.spec
        self.run_id: str = spec.resume.run_id if spec.resume is not None else spec.run_id or uuid.uuid4().hex
        #: The run's spec, named: a user's run gets a new checkpoint name, a resumed one keeps its own.
        self.spec = dataclasses.replace(spec, run_id=self.run_id, deep=True)
        self._lock = threading.Lock()
        self._preview: QImage | None = None
        self.live = LiveChanges(spec.settings, len(spec.pictures.styles), spec.pictures.content.size)
        self._report: Report[RunReport] = lambda _: None

    def set_style_map(self, layer: str | None) -> None:
        """Ask the run for a style map of ``layer`` with its previews (None: none); thread-safe."""
        self.live.style_map_layer = layer

    def update_regions(self, regions: Regions | None) -> None:
        """Regions painted during the run (thread-safe; RegionError when they cannot be used)."""
        self.live.paint(regions)

    def change(self, fields: Mapping[str, object]) -> None:
        """New values of live settings for the running optimisation (thread-safe; SettingsError when invalid)."""
        self.live.change(fields)

    def take_preview(self) -> QImage | None:
        """The newest preview since the last call, or None."""
        with self._lock:
            image, self._preview = self._preview, None
        return image

    def _post_preview(self, image: QImage) -> None:
        with self._lock:
            notify = self._preview is None
            self._preview = image
        if notify:
            self._report(PREVIEW_READY)

    def __call__(self, report: Report[RunReport], cancel: CancelToken) -> PictureResult:
        """The run's result, also when it stopped or failed: a failure that is not the user's to act on is logged
        and said as unexpected, and the picture so far is kept."""
        _lower_this_threads_priority()
        from ..core import door

        self._report = report
        spec, previews = self.spec, self.job.previews
        began = time.perf_counter()
        label = ""
        try:
            cancel.raise_if_cancelled()
            weights = self._weights.get(spec.settings.network_weights)
            label = weights.label
            with contextlib.ExitStack() as held:
                if previews is not None:  # its folder is this run's alone while it runs (Busy: another's)
                    going_on_from = spec.resume.position.step if spec.resume is not None else None
                    held.enter_context(previews.claim(self.run_id, going_on_from))
                result = door.picture(
                    spec, weights, RunHooks(report=self._forward, started=report, cancel=cancel, live=self.live,
                                            checkpoints=self._checkpoints, previews=Previews(0.15)),
                )  # fmt: skip
        except Cancelled:
            return self.nothing(CANCELLED, label, began)
        except Exception as exc:  # a refused resume, settings that do not fit, weights that do not load, a bug
            return self.nothing(_said(exc), label, began)
        if isinstance(result.outcome, Failed) and result.outcome.exception is not None:
            return dataclasses.replace(result, outcome=_said(result.outcome.exception))
        return result

    def _forward(self, record: Progress) -> None:
        if self.job.previews is not None:
            self.job.previews.keep(record)  # here, in the run's thread: writing a picture never stalls the window
        if record.preview is not None:
            self._post_preview(array_to_qimage(record.preview))
            record = dataclasses.replace(record, preview=None)
        self._report(record)

    def nothing(self, outcome: Outcome, label: str, began: float) -> PictureResult:
        """A run that ended before it made anything."""
        spec = self.spec
        return PictureResult(spec.pictures, None, None, spec.settings, spec.pictures.regions, outcome, None,
                             self.run_id, label, time.perf_counter() - began)  # fmt: skip


def _said(exc: BaseException) -> Failed:
    """A failure as the user is told it: an error of ours as it is; a bug or a device failure logged with its
    traceback and said as unexpected."""
    if isinstance(exc, StyleStudioError):
        return Failed.of(exc)
    log.error("the run failed", exc_info=exc)
    return Failed.of(StyleStudioError(f"the run failed unexpectedly: {exc}"))


class RunController(QObject):
    """Starts, stops and tracks runs; at most one runs at a time.

    A start while the previous run is still stopping waits for it and then
    begins, so the user can press Start again at once.

    A run saves checkpoints in ``checkpoints`` while it lasts. Its checkpoint
    is discarded when it ends (its result is in the window's history), but
    kept when the window closes during the run or the run fails (a refused
    resume too): the next start offers to resume it.

    Args:
        weights: where runs get their weights (injectable for tests).
        checkpoints: where runs save their checkpoints (None: nowhere).
    """

    started = Signal(object)  # RunRequest
    planned = Signal(object)  # RunPlan: what the run that started will do
    progressed = Signal(object)  # Progress
    preview = Signal(QImage)
    finished = Signal(str, object)  # whose run it was (``RunRequest.owner``), its PictureResult
    status_changed = Signal(object)  # RunStatus: a run started, was asked to stop, or ended

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        weights: WeightsCache | None = None,
        checkpoints: CheckpointStore | None = None,
    ) -> None:
        super().__init__(parent)
        self.weights = weights or WeightsCache()
        self.checkpoints = checkpoints
        self._closing = False
        self._job: BackgroundTask[RunReport, PictureResult] | None = None
        self._session: RenderSession | None = None
        self._pending: RunRequest | None = None
        self._stopping = False
        self._state: WindowState | None = None  # what the runs read the style map from (``follow``)

    @property
    def running(self) -> bool:
        return self._job is not None

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def status(self) -> RunStatus:
        if self._job is None:
            return RunStatus.IDLE
        return RunStatus.STOPPING if self._stopping else RunStatus.RUNNING

    def start(self, render: RunRequest) -> None:
        if self._job is not None:
            self._pending = render
            self.stop()
            return
        self._stopping = False
        session = RenderSession(render, self.weights, self.checkpoints)
        session.set_style_map(self._state.style_map if self._state is not None else None)
        job = BackgroundTask(session, "style-studio-render", failure="the run failed unexpectedly")
        job.on_report(self._on_report)
        job.on_end(self._on_finished)
        self._job, self._session = job, session
        job.start()
        self.started.emit(render)
        self.status_changed.emit(self.status)

    def job_settings(self) -> Settings | None:
        """The settings the run under way started with; None when none runs."""
        return self._session.spec.settings if self._session is not None else None

    def stop(self) -> None:
        if self._job is not None and not self._stopping:
            self._stopping = True
            self._job.cancel()
            self.status_changed.emit(self.status)

    @property
    def owner(self) -> str | None:
        """Whose the run under way is (``RunRequest.owner``); None when none runs."""
        return self._session.job.owner if self._session is not None else None

    def follow(self, state: WindowState, owner: str, failed: Callable[[str], None]) -> None:
        """Forward each live setting ``state`` changes to the run under way when it is ``owner``'s (a queued job
        keeps its own settings), and the style map to every run (each starts with the state's); ``failed`` hears
        why a value was refused."""
        self._state = state

        def forward(name: str, value: object) -> None:
            if name in settings_mod.LIVE_FIELDS and self.running and self.owner == owner:
                try:
                    self.change({name: value})
                except SettingsError as exc:
                    failed(str(exc))

        state.setting_changed.connect(forward)
        state.style_map_changed.connect(self._send_style_map)

    def change(self, fields: Mapping[str, object]) -> None:
        """Live settings changed (only those): the run under way takes them at its next iteration."""
        if self._session is not None and not self._stopping:
            self._session.change(fields)

    def _send_style_map(self, layer: str | None) -> None:
        """The state's style map changed: the run under way sends that layer's with its previews (None: none)."""
        if self._session is not None:
            self._session.set_style_map(layer)

    def update_regions(self, regions: Regions | None) -> None:
        """Regions painted during the run: it takes them at its next iteration."""
        if self._session is not None and not self._stopping:
            self._session.update_regions(regions)

    def shutdown(self) -> None:
        """Stop any run and wait for it (closing the window)."""
        self._pending = None
        if self._job is not None:
            self._closing = True  # the run's checkpoint stays, to be resumed at the next start
            self.stop()
            self._job.wait()

    @Slot(object)
    def _on_report(self, report: RunReport) -> None:
        match report:
            case PreviewReady():
                image = self._session.take_preview() if self._session is not None else None
                if image is not None:
                    self.preview.emit(image)
            case Progress():
                self.progressed.emit(report)
            case RunPlan():
                self.planned.emit(report)

    @Slot(object)
    def _on_finished(self, outcome: TaskOutcome[PictureResult]) -> None:
        session = self._session
        self._job = self._session = None
        self._stopping = False
        if session is not None:
            # No result: it never ran (the window closed at once), or its session raised.
            result = outcome.value
            if result is None:
                ended = outcome.ended if isinstance(outcome.ended, Failed) else CANCELLED
                result = session.nothing(ended, "", time.perf_counter())
            self._ended(session, result)
        pending, self._pending = self._pending, None
        if pending is not None:
            self.start(pending)
        else:
            self.status_changed.emit(self.status)

    def _ended(self, session: RenderSession, result: PictureResult) -> None:
        # A run that failed (a refused resume among them) keeps its checkpoint: it is the user's only copy.
        # So does a named run that was stopped: its owner goes on from it.
        match result.outcome:
            case Failed():
                kept = True
            case Stopped():
                kept = self._closing or session.job.spec.run_id is not None
            case _:
                kept = self._closing
        if self.checkpoints is not None and not kept:
            self.checkpoints.discard(session.run_id)
        self.finished.emit(session.job.owner, result)
