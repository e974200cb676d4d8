"""The run bar under the picture: Start, Stop, the progress bar, speed, ETA and gradient."""

from __future__ import annotations

import math
import time
from collections import deque

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from ..core import Failed, Finished, PictureResult, Progress, Stopped

#: Progress bar units per iteration.
STEP_RESOLUTION = 100
#: Pixels between the figures under the bar (the pace, the time left, the gradient).
FIGURE_GAP = 16


class RunBar(QWidget):
    """Shows a run's progress and offers Start and Stop.

    Signals:
        startRequested(), stopRequested(): the buttons.
    """

    startRequested = Signal()
    stopRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rates: deque[tuple[float, float]] = deque(maxlen=20)
        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Start stylising (Ctrl+Enter)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop and keep the picture so far (Esc)")
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        # One text colour over a light fill: styles that draw the filled part's text in another colour cut the
        # words where the fill ends ("Vid|eo · frame 1/5").
        self.progress.setStyleSheet(
            "QProgressBar { border: 1px solid palette(mid); border-radius: 3px; text-align: center;"
            " color: palette(window-text); background: palette(base); }"
            " QProgressBar::chunk { background-color: #a9cdf2; border-radius: 2px; }"
        )
        self.progress.setFormat("Ready")
        self.progress.setValue(0)
        self.rate_label = QLabel("")
        self.eta_label = QLabel("")
        self.grad_label = QLabel("")
        self.grad_label.setToolTip(
            "Norm of the loss gradient with respect to the image: how hard the optimisation is still pushing"
        )
        # Two rows: the progress text ("Scale 2/3 · iteration 140/150", "Done in 2 min 18 s")
        # gets the width beside the buttons even when the side panels leave the picture narrow.
        buttons_and_progress = QHBoxLayout()
        buttons_and_progress.addWidget(self.start_button)
        buttons_and_progress.addWidget(self.stop_button)
        buttons_and_progress.addWidget(self.progress, 1)
        figures = QHBoxLayout()
        figures.setSpacing(FIGURE_GAP)  # "ETA 43 min 42 s" and "∇ 0.111" read as two figures, not one
        figures.addStretch(1)
        for label in (self.rate_label, self.eta_label, self.grad_label):
            label.setMinimumWidth(70)
            figures.addWidget(label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(buttons_and_progress)
        layout.addLayout(figures)
        self.start_button.clicked.connect(self.startRequested)
        self.stop_button.clicked.connect(self.stopRequested)

    def set_enabled(self, *, can_start: bool, can_stop: bool) -> None:
        self.start_button.setEnabled(can_start)
        self.stop_button.setEnabled(can_stop)

    def begin(self) -> None:
        """A run was started: busy until its first iteration."""
        self._rates.clear()
        self.progress.setRange(0, 0)
        self.progress.setFormat("Loading the network…")

    def show_busy(self, text: str) -> None:
        """Busy without a count of steps (the look tuned to the painting): ``text``, the bar moving."""
        self.progress.setRange(0, 0)
        self.progress.setFormat(text)
        for label in (self.rate_label, self.eta_label, self.grad_label):
            label.setText("")

    def show_stopping(self) -> None:
        self.progress.setFormat("Stopping…")

    def show_progress(self, record: Progress) -> None:
        now = time.perf_counter()
        self._rates.append((now, record.steps_done))
        rate = 0.0
        if len(self._rates) > 1:
            (t0, s0), (t1, s1) = self._rates[0], self._rates[-1]
            rate = (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0
        # In hundredths of an iteration: a tiled iteration moves the bar tile by tile.
        if self.progress.maximum() != record.steps * STEP_RESOLUTION:
            self.progress.setRange(0, record.steps * STEP_RESOLUTION)
        self.progress.setValue(round(record.steps_done * STEP_RESOLUTION))
        part = f" · part {record.part}/{record.parts}" if record.within_iteration else ""
        where = f"Scale {record.scale}/{record.scales} · iteration {record.iteration}/{record.iterations}"
        self.progress.setFormat(
            self._fitting(
                f"{where} · {record.width}×{record.height}{part}",
                f"{where}{part}",
                f"{record.scale}/{record.scales} · {record.iteration}/{record.iterations}{part}",
            )
        )
        if rate >= 0.1:
            self.rate_label.setText(f"{rate:.1f} it/s")
        else:
            self.rate_label.setText(f"{1 / rate:.0f} s/it" if rate else "")
        self.eta_label.setText(f"ETA {duration(record.eta)}" if record.eta is not None and not record.done else "")
        if not record.within_iteration:  # a part of an iteration carries no new gradient
            self.grad_label.setText(f"∇ {record.grad_norm:.3g}")

    def show_clip_progress(self, frame: int, frames: int, iteration: int, iterations: int, eta: float | None) -> None:
        """A video's render: the clip's share done, the frame and its iteration, the clip's ETA."""
        if self.progress.maximum() != frames * STEP_RESOLUTION:
            self.progress.setRange(0, frames * STEP_RESOLUTION)
        self.progress.setValue(round((frame - 1 + iteration / max(iterations, 1)) * STEP_RESOLUTION))
        self.progress.setFormat(
            self._fitting(
                f"Video · frame {frame}/{frames} · iteration {iteration}/{iterations}",
                f"Frame {frame}/{frames} · {iteration}/{iterations}",
            )
        )
        self.rate_label.setText("")
        self.grad_label.setText("")
        self.eta_label.setText(f"ETA {duration(eta)}" if eta is not None else "")

    def show_text(self, text: str) -> None:
        """A state in words (a video stopped or written)."""
        if self.progress.maximum() == 0:
            self.progress.setRange(0, 1)
        self.progress.setFormat(text)
        self.eta_label.setText("")

    def _fitting(self, *texts: str) -> str:
        """The first (longest) of ``texts`` that fits the bar on one line; the last when none does."""
        room = self.progress.contentsRect().width() - 8
        metrics = self.progress.fontMetrics()
        return next((text for text in texts if metrics.horizontalAdvance(text) <= room), texts[-1])

    def show_outcome(self, outcome: PictureResult) -> None:
        match outcome.outcome:
            case Failed():
                self.progress.setFormat("Stopped with an error")
            case Stopped():
                self.progress.setFormat("Stopped — the picture so far is kept")
            case Finished():
                elapsed = outcome.last.elapsed if outcome.last is not None else 0.0
                self.progress.setFormat(f"Done in {duration(elapsed)}")
        if self.progress.maximum() == 0:
            self.progress.setRange(0, 1)
        self.eta_label.setText("")


#: The longest duration said as it is (a speed measured wrong, or a plan of years).
LONGEST = 100 * 86400


def duration(seconds: float | None) -> str:
    """Seconds as a person reads them: "42 s", "3 min 05 s", "1 h 02 min"."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    if seconds >= LONGEST:
        return "over 100 days"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def ago(timestamp: float) -> str:
    """How long ago a moment (seconds since the epoch) was: "just now", "5 min ago", "3 days ago"."""
    seconds = time.time() - timestamp
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return "yesterday" if days == 1 else f"{days} days ago"
