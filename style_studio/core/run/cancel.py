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


class EitherToken(CancelToken):
    """Set when it is, or when any of ``tokens`` is: a part of a job that stops at either of two requests (a clip's
    tuning stops at its Stop after this frame as at its Cancel now)."""

    def __init__(self, *tokens: CancelToken) -> None:
        super().__init__()
        self.tokens = tokens

    @property
    def cancelled(self) -> bool:
        return super().cancelled or any(token.cancelled for token in self.tokens)

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise Cancelled()
