"""Running the engine off the GUI thread.

One run, one ``QThread`` with a ``RenderWorker`` in it. The worker iterates the
engine's generator and forwards each ``Progress`` as a signal. Previews go
through a one-slot mailbox: the worker builds a ``QImage`` (a copy that owns
its pixels), drops it in the slot and signals only when the slot was empty, so
the GUI thread always takes the latest frame and never a backlog. Stopping is
a cancel token the engine checks every iteration; nothing is ever terminated.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image
from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot
from PySide6.QtGui import QImage

from ..core.cancel import CancelToken
from ..core.errors import Cancelled, StyleStudioError
from ..core.settings import Settings
from .qt_images import array_to_qimage

if TYPE_CHECKING:
    from ..core.engine import Progress
    from ..core.weights import LoadedWeights

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RenderJob:
    """What a run needs: the pictures and the settings (weights are named in the settings)."""

    content: Image.Image
    styles: tuple[Image.Image, ...]
    settings: Settings
    content_name: str = "content"
    style_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended.

    Attributes:
        stop_reason: "finished" or "cancelled"; None when it failed.
        error: the message to show when it failed.
        result: the best image at the requested size (also after a stop or an error).
        settings: the settings it ran with (with any live changes).
        weights_label: the weights actually used, as the status bar says it.
        last: the last Progress record, if any.
    """

    stop_reason: str | None
    error: str | None
    result: Image.Image | None
    settings: Settings
    weights_label: str | None
    last: Any = None


class WeightsCache:
    """Loaded weights kept between runs; loading happens in the worker thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[str, float] | None = None
        self._value: LoadedWeights | None = None

    @staticmethod
    def _key_of(choice: str) -> tuple[str, float]:
        path = Path(choice)
        mtime = path.stat().st_mtime if choice not in ("imagenet", "untrained") and path.is_file() else 0.0
        return choice, mtime

    def get(self, choice: str) -> LoadedWeights:
        from ..core.weights import load_weights

        key = self._key_of(choice)
        with self._lock:
            if self._key != key or self._value is None:
                self._value = load_weights(choice)
                self._key = key
            return self._value


def _lower_this_threads_priority() -> None:
    """Run the optimisation at a lower CPU priority than the window.

    The engine keeps every core busy; at equal priority the GUI thread waits
    for a time slice behind torch's worker threads (measured: 45 ms stalls,
    every second, on 2 cores). Threads torch starts from here inherit the
    lower priority. Lowering one's own priority needs no privileges.
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


class RenderWorker(QObject):
    """Runs one job in its thread. Signals are queued to the GUI thread."""

    progressed = Signal(object)  # Progress without its preview
    preview_available = Signal()
    finished = Signal(object)  # RunOutcome

    def __init__(self, job: RenderJob, weights: WeightsCache) -> None:
        super().__init__()
        self.job = job
        self._weights = weights
        self._cancel = CancelToken()
        self._lock = threading.Lock()
        self._preview: QImage | None = None
        self._transfer: Any = None
        self._pending_settings: Settings | None = None

    def cancel(self) -> None:
        self._cancel.cancel()

    def update_settings(self, settings: Settings) -> None:
        """New loss weights for the running optimisation (thread-safe)."""
        with self._lock:
            transfer = self._transfer
            if transfer is None:
                self._pending_settings = settings
        if transfer is not None:
            transfer.update_settings(settings)

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
            self.preview_available.emit()

    @Slot()
    def run(self) -> None:
        _lower_this_threads_priority()
        from ..core.engine import StyleTransfer

        job = self.job
        transfer = None
        last: Progress | None = None
        label: str | None = None
        try:
            self._cancel.raise_if_cancelled()
            weights = self._weights.get(job.settings.weights)
            label = weights.label
            self._cancel.raise_if_cancelled()
            transfer = StyleTransfer(
                job.content, list(job.styles), job.settings, weights, cancel=self._cancel, preview_interval=0.15
            )
            with self._lock:
                self._transfer = transfer
                pending, self._pending_settings = self._pending_settings, None
            if pending is not None:
                transfer.update_settings(pending)
            for record in transfer.run():
                if record.preview is not None:
                    self._post_preview(array_to_qimage(record.preview))
                    record = dataclasses.replace(record, preview=None)
                self.progressed.emit(record)
                last = record
            outcome = RunOutcome(
                last.stop_reason if last else "cancelled", None, transfer.result, transfer.settings, label, last
            )
        except Cancelled:
            outcome = RunOutcome("cancelled", None, None, job.settings, label, last)
        except StyleStudioError as exc:
            outcome = self._failed(str(exc), transfer, label, last)
        except Exception as exc:  # a bug or a device failure: keep the app alive, say what happened
            log.exception("the run failed")
            outcome = self._failed(f"the run failed unexpectedly: {exc}", transfer, label, last)
        finally:
            with self._lock:
                self._transfer = None
            # Hand the worker back to the GUI thread, which owns and deletes it.
            app = QCoreApplication.instance()
            if app is not None:
                self.moveToThread(app.thread())
        self.finished.emit(outcome)

    def _failed(self, message: str, transfer: Any, label: str | None, last: Any) -> RunOutcome:
        result = transfer.result if transfer is not None else None
        settings = transfer.settings if transfer is not None else self.job.settings
        return RunOutcome(None, message, result, settings, label, last)


class RunController(QObject):
    """Starts, stops and tracks runs; at most one runs at a time.

    A start while the previous run is still stopping waits for it and then
    begins, so the user can press Start again at once.
    """

    started = Signal(object)  # RenderJob
    progressed = Signal(object)  # Progress
    preview = Signal(QImage)
    finished = Signal(object)  # RunOutcome
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.weights = WeightsCache()
        self._thread: QThread | None = None
        self._worker: RenderWorker | None = None
        self._pending: RenderJob | None = None
        self._stopping = False

    @property
    def running(self) -> bool:
        return self._thread is not None

    @property
    def stopping(self) -> bool:
        return self._stopping

    def start(self, job: RenderJob) -> None:
        if self._thread is not None:
            self._pending = job
            self.stop()
            return
        self._stopping = False
        worker = RenderWorker(job, self.weights)
        thread = QThread()
        thread.setObjectName("style-studio-render")
        worker.moveToThread(thread)
        thread.started.connect(worker.run)
        worker.progressed.connect(self.progressed)
        worker.preview_available.connect(self._deliver_preview)
        worker.finished.connect(self._on_finished)
        self._thread, self._worker = thread, worker
        thread.start()
        self.started.emit(job)
        self.busy_changed.emit(True)

    def stop(self) -> None:
        if self._worker is not None:
            self._stopping = True
            self._worker.cancel()

    def update_settings(self, settings: Settings) -> None:
        if self._worker is not None and not self._stopping:
            self._worker.update_settings(settings)

    def shutdown(self) -> None:
        """Stop any run and wait for its thread (closing the window)."""
        self._pending = None
        if self._thread is None:
            return
        self.stop()
        thread = self._thread
        # quit() before the worker returns makes the thread's exec() return at once.
        thread.quit()
        thread.wait()
        # The worker's finished signal is queued to this thread; handle it now.
        self._on_finished(None)

    @Slot()
    def _deliver_preview(self) -> None:
        worker = self._worker
        image = worker.take_preview() if worker is not None else None
        if image is not None:
            self.preview.emit(image)

    @Slot(object)
    def _on_finished(self, outcome: RunOutcome | None) -> None:
        if self._thread is None:
            return
        thread, worker = self._thread, self._worker
        if outcome is None and worker is not None:
            outcome = RunOutcome("cancelled", None, None, worker.job.settings, None)
        thread.quit()
        thread.wait()
        self._thread = self._worker = None
        self._stopping = False
        if outcome is not None:
            self.finished.emit(outcome)
        pending, self._pending = self._pending, None
        if pending is not None:
            self.start(pending)
        else:
            self.busy_changed.emit(False)
