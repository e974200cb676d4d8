"""Background tasks: one helper for every long task the window starts (a run, a download, an export).

A ``BackgroundTask`` runs a plain function in its own ``QThread``. The function gets a
``report`` callable, whose values reach the GUI thread as ``progressed``
signals, and a ``CancelToken`` that ``BackgroundTask.cancel()`` sets; the function checks
it where it can stop. When the function returns or raises, ``finished``
carries a ``TaskOutcome`` in the GUI thread. Nothing is ever terminated:
``wait()`` (closing the window) lets the function come to its end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

from ..core import Cancelled, CancelToken, StyleStudioError

log = logging.getLogger(__name__)

Report = Callable[[object], None]
Work = Callable[[Report, CancelToken], Any]


@dataclass(frozen=True)
class TaskOutcome:
    """How a job ended: its return value, or why it did not return one.

    Attributes:
        value: what the function returned (None when it raised).
        error: the message to show when it failed, else None.
        cancelled: it stopped because it was cancelled.
    """

    value: Any = None
    error: str | None = None
    cancelled: bool = False


class _Worker(QObject):
    progressed = Signal(object)
    finished = Signal(object)  # TaskOutcome

    def __init__(self, work: Work, cancel: CancelToken, failure: str) -> None:
        super().__init__()
        self._work = work
        self._cancel = cancel
        self._failure = failure

    @Slot()
    def run(self) -> None:
        try:
            outcome = TaskOutcome(value=self._work(self.progressed.emit, self._cancel))
        except Cancelled:
            outcome = TaskOutcome(cancelled=True)
        except StyleStudioError as exc:
            outcome = TaskOutcome(error=str(exc))
        except Exception as exc:  # a bug or a device failure: keep the app alive and say what happened
            log.exception("%s", self._failure)
            outcome = TaskOutcome(error=f"{self._failure}: {exc}")
        # The worker stays in its thread: ``BackgroundTask._finish`` drops it once the thread has
        # stopped, when deleting it from the GUI thread is safe. Moving it back from
        # here (moveToThread) held the GIL while waiting for Qt's locks, which the GUI
        # thread may hold while it deletes a widget and waits for the GIL: a deadlock,
        # seen when a window closed by one test was deleted as the next test's run ended.
        self.finished.emit(outcome)


class BackgroundTask(QObject):
    """One function, run once in its own thread.

    Args:
        work: ``work(report, cancel)``; its return value becomes ``TaskOutcome.value``.
        name: the thread's name (seen in debuggers and in the tests' thread check).
        failure: how an unexpected exception is introduced to the user.

    Signals:
        progressed(object): a value the function reported.
        finished(TaskOutcome): the function ended; the thread has stopped.
    """

    progressed = Signal(object)
    finished = Signal(object)

    def __init__(self, work: Work, name: str, *, failure: str = "the task failed unexpectedly") -> None:
        super().__init__()
        self.cancel_token = CancelToken()
        self._worker: _Worker | None = _Worker(work, self.cancel_token, failure)
        self._thread: QThread | None = QThread()
        self._thread.setObjectName(name)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progressed.connect(self.progressed)
        self._worker.finished.connect(self._finish)

    def start(self) -> None:
        assert self._thread is not None, "a job runs once"
        self._thread.start()

    def cancel(self) -> None:
        self.cancel_token.cancel()

    def wait(self) -> None:
        """Block until the function has returned (it is not cancelled), and deliver ``finished`` now."""
        if self._thread is not None:
            self._thread.quit()  # exec() returns as soon as run() does
            self._thread.wait()
            # The worker's reports and its finished signal wait in this thread's queue: deliver them now.
            QCoreApplication.sendPostedEvents(self, 0)
            if self._thread is not None:  # no finished signal came (the worker never ran)
                self._finish(TaskOutcome(cancelled=True))

    @Slot(object)
    def _finish(self, outcome: TaskOutcome) -> None:
        if self._thread is None:
            return
        self._thread.quit()
        self._thread.wait()
        self._thread = self._worker = None
        self.finished.emit(outcome)
