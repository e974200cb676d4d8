"""Background tasks: one helper for every long task the window starts (a run, a download, an export).

A ``BackgroundTask[R, V]`` runs a plain function in its own ``QThread``. The function gets a
``report`` callable taking its one report type ``R``, whose values reach the GUI thread as
``progressed`` signals, and a ``CancelToken`` that ``BackgroundTask.cancel()`` sets; the
function checks it where it can stop. When the function returns its ``V`` or raises,
``finished`` carries a ``TaskOutcome[V]`` in the GUI thread. Nothing is ever terminated:
``wait()`` (closing the window) lets the function come to its end.

Qt's signals carry Python objects untyped; the types are the task's: a task is made with the
report type its function sends (a listener takes that type, and needs no ``isinstance``), and
its end is one ``Outcome`` with the value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

from ..core import CANCELLED, FINISHED, Cancelled, CancelToken, Failed, Outcome, StyleStudioError

log = logging.getLogger(__name__)

#: What a task's function reports, and what it returns.
R = TypeVar("R")
V = TypeVar("V")
#: The function's channel for its reports: one type a task says.
Report: TypeAlias = Callable[[R], None]
Work: TypeAlias = Callable[[Report[R], CancelToken], V]


@dataclass(frozen=True)
class TaskOutcome(Generic[V]):
    """How a task ended, and what its function returned.

    Attributes:
        ended: ``Finished``; ``Stopped`` (it was cancelled); ``Failed``, with the message to show.
        value: what the function returned; None unless it finished.
    """

    ended: Outcome
    value: V | None = None

    @property
    def error(self) -> str | None:
        """The message to show when it failed, else None."""
        return self.ended.error if isinstance(self.ended, Failed) else None


class _Worker(QObject, Generic[R, V]):
    progressed = Signal(object)
    finished = Signal(object)  # TaskOutcome

    def __init__(self, work: Work[R, V], cancel: CancelToken, failure: str) -> None:
        super().__init__()
        self._work = work
        self._cancel = cancel
        self._failure = failure

    @Slot()
    def run(self) -> None:
        outcome: TaskOutcome[V]
        try:
            outcome = TaskOutcome(FINISHED, self._work(self.progressed.emit, self._cancel))
        except Cancelled:
            outcome = TaskOutcome(CANCELLED)
        except StyleStudioError as exc:
            outcome = TaskOutcome(Failed(str(exc), exc))
        except Exception as exc:  # a bug or a device failure: keep the app alive and say what happened
            log.exception("%s", self._failure)
            outcome = TaskOutcome(Failed(f"{self._failure}: {exc}", exc))
        # The worker stays in its thread: ``BackgroundTask._finish`` drops it once the thread has
        # stopped, when deleting it from the GUI thread is safe. Moving it back from
        # here (moveToThread) held the GIL while waiting for Qt's locks, which the GUI
        # thread may hold while it deletes a widget and waits for the GIL: a deadlock,
        # seen when a window closed by one test was deleted as the next test's run ended.
        self.finished.emit(outcome)


class BackgroundTask(QObject, Generic[R, V]):
    """One function, run once in its own thread.

    Args:
        work: ``work(report, cancel)``; it reports values of type ``R``; its return value becomes
            ``TaskOutcome.value``.
        name: the thread's name (seen in debuggers and in the tests' thread check).
        failure: how an unexpected exception is introduced to the user.

    Signals:
        progressed(R): a value the function reported.
        finished(TaskOutcome[V]): the function ended; the thread has stopped.
    """

    progressed = Signal(object)
    finished = Signal(object)

    def __init__(self, work: Work[R, V], name: str, *, failure: str = "the task failed unexpectedly") -> None:
        super().__init__()
        self.cancel_token = CancelToken()
        self._worker: _Worker[R, V] | None = _Worker(work, self.cancel_token, failure)
        self._thread: QThread | None = QThread()
        self._thread.setObjectName(name)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progressed.connect(self.progressed)
        self._worker.finished.connect(self._finish)

    def on_report(self, listener: Callable[[R], None]) -> None:
        """Have ``listener`` hear each report, in the GUI thread (``progressed``, typed)."""
        self.progressed.connect(listener)

    def on_end(self, listener: Callable[[TaskOutcome[V]], None]) -> None:
        """Have ``listener`` hear how the task ended, in the GUI thread (``finished``, typed)."""
        self.finished.connect(listener)

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
                self._finish(TaskOutcome(CANCELLED))

    @Slot(object)
    def _finish(self, outcome: TaskOutcome[V]) -> None:
        if self._thread is None:
            return
        self._thread.quit()
        self._thread.wait()
        self._thread = self._worker = None
        self.finished.emit(outcome)
