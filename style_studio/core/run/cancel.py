"""Stopping a run from another thread, without importing torch."""

from __future__ import annotations

import threading

from ..errors import Cancelled


class CancelToken:
    """A thread-safe flag the run checks every iteration (and inside L-BFGS's closure)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()
