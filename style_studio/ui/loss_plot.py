"""Live loss curves (total, content, TV and each style layer) with pyqtgraph.

pyqtgraph draws thousands of points per frame cheaply; redraws are coalesced
to at most ~5 per second so a fast run never floods the GUI thread.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QVBoxLayout, QWidget

_COLORS = [
    "#e6194b",
    "#3cb44b",
    "#4363d8",
    "#f58231",
    "#911eb4",
    "#42d4f4",
    "#f032e6",
    "#9a6324",
    "#469990",
    "#808000",
    "#000075",
    "#a9a9a9",
]


class LossPlot(QWidget):
    """Loss per step, log scale; one curve per term."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=True, background="w", foreground="#333")
        self.view = pg.GraphicsLayoutWidget()
        self.plot = self.view.addPlot(row=0, col=0)
        self.plot.setLogMode(y=True)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setLabel("bottom", "step")
        self.plot.setLabel("left", "loss")
        self.plot.setMenuEnabled(False)
        # A monitor, redrawn several times a second: the ranges follow the data.
        self.plot.setMouseEnabled(x=False, y=False)
        # The legend has a column of its own, right of the curves: drawn over
        # the plot it hid the newest steps, and in one column it ran off the
        # short dock. Two columns of four fit the dock's height.
        self.legend = pg.LegendItem(labelTextSize="8pt", colCount=2)
        self.view.addItem(self.legend, row=0, col=1)
        self.view.setMinimumHeight(150)
        self._show_empty()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self._series: dict[str, tuple[list[float], list[float]]] = {}
        self._curves: dict[str, pg.PlotDataItem] = {}
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(200)
        self._timer.timeout.connect(self._redraw)

    def clear(self) -> None:
        self._series.clear()
        for curve in self._curves.values():
            self.plot.removeItem(curve)
        self._curves.clear()
        self.legend.clear()
        self._show_empty()

    def _show_empty(self) -> None:
        # Decades from 0.001 to 10 until the first losses arrive: pyqtgraph's
        # empty log axis spans 1 to 10 and prints its minor ticks on top of each other.
        self.plot.setXRange(0, 100, padding=0)
        self._show_decades(-3, 1)

    def add(self, step: int, values: dict[str, float]) -> None:
        for name, value in values.items():
            if value is None or not math.isfinite(value) or value <= 0:
                continue
            xs, ys = self._series.setdefault(name, ([], []))
            xs.append(step)
            ys.append(value)
        if not self._timer.isActive():
            self._timer.start()

    def series(self, name: str) -> list[float]:
        return list(self._series.get(name, ([], []))[1])

    def _redraw(self) -> None:
        added = False
        for index, (name, (xs, ys)) in enumerate(self._series.items()):
            curve = self._curves.get(name)
            if curve is None:
                width = 2.5 if name == "total" else 1.2
                curve = self.plot.plot(pen=pg.mkPen(_COLORS[index % len(_COLORS)], width=width))
                self.legend.addItem(curve, name)
                self._curves[name] = curve
                added = True
            curve.setData(xs, ys)
        if added:
            # Placed now: until the next layout pass the new legend sat over the axis labels.
            self.view.ci.layout.activate()
        self._fit_ranges()

    def _fit_ranges(self) -> None:
        """Steps from 0, losses over whole decades (at least two).

        pyqtgraph's auto-range spread a single step over -49 ... 51, and a range of
        under a decade on a log axis labels its minor ticks on top of each other.
        """
        ys = [y for _, values in self._series.values() for y in values]
        if not ys:
            return
        last = max(xs[-1] for xs, _ in self._series.values() if xs)
        self.plot.setXRange(0, max(10, last), padding=0.02)
        low, high = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        self._show_decades(min(low, high - 2), high)

    def _show_decades(self, low: int, high: int) -> None:
        """The loss axis from 10**low to 10**high, labelled at each decade only.

        On a short dock pyqtgraph also labels the minor ticks, on top of each other.
        """
        self.plot.setYRange(low, high, padding=0.04)  # the end decades inside, so they are labelled
        every = math.ceil((high - low) / 4)  # at most 5 labels: a short dock has room for no more
        decades = [(float(k), f"{10.0**k:g}" if (high - k) % every == 0 else "") for k in range(low, high + 1)]
        minor = [(math.log10(m) + k, "") for k in range(low, high) for m in range(2, 10)]
        self.plot.getAxis("left").setTicks([decades, minor])
