"""Plays a clip in the picture area at its frame rate: the styled video beside its source, or the source alone."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from ..core import StyleStudioError, read_frames
from .pictures import seek_point

Frames = Generator[np.ndarray, None, None]


def _pictures(path: Path, start: float) -> Frames:
    for frame in read_frames(path, start=start):
        yield frame.picture


class ClipPlayer(QObject):
    """Shows a clip's frames one after another at its rate, decoding each as it is due (memory: a frame or two).

    ``play(source, rate, frames, start, styled=None)`` plays from frame ``start``;
    with ``styled`` (a styled video of ``source``) each step carries its frame
    and the source's, for before/after. A frame that is late is shown at once
    and the clock goes on from it, so a slow machine plays slower, never in bursts.

    Signals:
        frame(int, object, object): the frame's number (from 0), the picture to show and the source's frame
            (the same array when there is no styled video).
        stopped(int): playing stopped (paused, or at the clip's end) on this frame.
    """

    frame = Signal(int, object, object)
    stopped = Signal(int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._step)
        self._frames: Iterator[tuple[np.ndarray, np.ndarray]] | None = None
        self._decoders: list[Frames] = []
        self._number = 0
        self._last = 0
        self._interval = 0.04
        self._due = 0.0

    @property
    def playing(self) -> bool:
        return self._frames is not None

    def play(self, source: Path, rate: float, frames: int, start: int = 0, styled: Path | None = None) -> None:
        """Play from frame ``start`` (from the first when ``start`` is the last frame: playing again from the end)."""
        self.pause(announce=False)
        start = 0 if start >= frames - 1 else max(0, start)
        seconds = seek_point(start, rate)
        sources = _pictures(source, seconds)
        shown = _pictures(styled, seconds) if styled is not None else None
        self._decoders = [sources] if shown is None else [shown, sources]
        self._frames = zip(shown, sources, strict=False) if shown is not None else ((s, s) for s in sources)
        self._number, self._last = start, frames - 1
        self._interval = 1 / rate
        self._due = time.perf_counter()
        self._step()

    def pause(self, *, announce: bool = True) -> None:
        """Stop on the frame shown (``stopped`` says which, when ``announce``)."""
        if self._frames is None:
            return
        self._timer.stop()
        self._close()
        if announce:
            self.stopped.emit(max(0, self._number - 1))

    def _step(self) -> None:
        if self._frames is None:
            return
        try:
            shown, source = next(self._frames)
        except (StopIteration, StyleStudioError):  # the end, or a damaged frame: stop on the last one shown
            self.pause()
            return
        self.frame.emit(self._number, shown, source)
        self._number += 1
        if self._number > self._last:
            self.pause()
            return
        self._due = max(self._due + self._interval, time.perf_counter())
        self._timer.start(max(0, round((self._due - time.perf_counter()) * 1000)))

    def _close(self) -> None:
        """Let go of the decoders (their files close now, not when they are collected)."""
        self._frames = None
        for decoder in self._decoders:
            decoder.close()
        self._decoders = []
