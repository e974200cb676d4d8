"""The window under load: event latency during a run, the cost of previews, time to appear.

1. Latency: a 10 ms QTimer runs in the GUI thread while a 512 px run goes
   at full speed; its lateness (actual interval minus 10 ms) is collected
   and its 99th percentile must be at most 50 ms.
2. Previews: iterations per second of window runs with previews (every
   150 ms, as shipped) and without, in 3 A/B pairs at 256 px; the median
   pair's cost may be at most 3 % (one pair can be off by as much on this
   shared machine: a single A/B/A/B once read +3.2 %, and -0.3 % rerun).
3. Launch: ``style-studio`` is started in a fresh process; the time from
   the process's start until the window is shown must be at most 2 s (torch
   is loaded after the window shows).

Runs offscreen (QT_QPA_PLATFORM=offscreen) unless a display is set.

    python benchmarks/window.py
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import PROXY, ROOT, machine, median, table

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

LATENCY_P99_MS = 50
PREVIEW_COST = 0.03
LAUNCH_S = 2.0

LAUNCH_CHILD = r"""
import sys, time
from PySide6.QtCore import QTimer
from style_studio.ui import main_window
shown = main_window.MainWindow.show
def show(self):
    shown(self)
    print(f"SHOWN {time.time():.6f}", flush=True)
    QTimer.singleShot(0, self.close)
main_window.MainWindow.show = show
from style_studio.cli import main
sys.exit(main([]))
"""


def launch_seconds(runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            env = dict(os.environ, XDG_CONFIG_HOME=home, HOME=home)
            start = time.time()
            out = subprocess.run(
                [sys.executable, "-c", LAUNCH_CHILD],
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
                timeout=120,
                check=True,
            )
        shown = float(next(line.split()[1] for line in out.stdout.splitlines() if line.startswith("SHOWN")))
        times.append(shown - start)
    return sorted(times)[len(times) // 2]


def make_window(settings_dir: str):
    from PySide6.QtCore import QSettings

    from style_studio.ui.app import create_application
    from style_studio.ui.main_window import MainWindow
    from style_studio.ui.store import Store

    create_application()

    store = Store(QSettings(str(Path(settings_dir) / "bench.ini"), QSettings.Format.IniFormat))
    window = MainWindow(store)
    window.show()
    return window


def run_window(window, settings, seconds: float | None = None):
    """Start a run and process events until it ends (or ``seconds`` pass); returns the records."""
    from PySide6.QtCore import QEventLoop

    window.controls.set_settings(settings)
    records = []
    window.controller.progressed.connect(records.append)
    loop = QEventLoop()
    window.controller.finished.connect(loop.quit)
    window.commands.start.trigger()
    if seconds is not None:
        from PySide6.QtCore import QTimer

        QTimer.singleShot(int(seconds * 1000), window.stop)
    loop.exec()
    window.controller.progressed.disconnect(records.append)
    window.controller.finished.disconnect(loop.quit)
    return records


def latency(window, weights: str) -> tuple[float, float, int]:
    from PySide6.QtCore import QTimer

    from style_studio.core.settings import DEFAULTS

    lateness: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        lateness.append(max(0.0, (now - last[0]) * 1000 - 10))
        last[0] = now

    timer = QTimer()
    timer.setTimerType(__import__("PySide6.QtCore").QtCore.Qt.TimerType.PreciseTimer)
    timer.setInterval(10)
    timer.timeout.connect(tick)
    settings = dataclasses.replace(DEFAULTS, size=512, iterations=10_000, weights=weights)
    timer.start()
    records = run_window(window, settings, seconds=20)
    timer.stop()
    lateness.sort()
    p99 = lateness[int(len(lateness) * 0.99)]
    return p99, lateness[len(lateness) // 2], len(records)


def preview_cost(window, weights: str) -> tuple[float, float, float]:
    """Median iterations/s with and without previews, and the median pair's cost."""
    from style_studio.core.settings import DEFAULTS

    settings = dataclasses.replace(DEFAULTS, size=256, iterations=80, weights=weights)
    from style_studio.core.run import engine

    real = engine.StyleTransfer
    rates: dict[bool, list[float]] = {True: [], False: []}

    class NoPreviews(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            kwargs["preview_interval"] = float("inf")
            super().__init__(*args, **kwargs)

        def _record(self, *args, **kwargs):
            kwargs["force_preview"] = False
            return super()._record(*args, **kwargs)

    for previews in (True, False) * 3:
        engine.StyleTransfer = real if previews else NoPreviews
        try:
            records = run_window(window, settings)
        finally:
            engine.StyleTransfer = real
        steady = records[10:]
        rates[previews].append((len(steady) - 1) / (steady[-1].elapsed - steady[0].elapsed))
    costs = [1 - a / b for a, b in zip(rates[True], rates[False], strict=True)]
    return median(rates[True]), median(rates[False]), median(costs)


def main() -> None:
    weights = str(PROXY) if PROXY.exists() else "untrained"
    launch = launch_seconds()
    with tempfile.TemporaryDirectory() as settings_dir:
        window = make_window(settings_dir)
        p99, p50, iterations = latency(window, weights)
        with_previews, without, cost = preview_cost(window, weights)
        window.close()
    print(f"The window under load ({machine()}; Qt platform {os.environ['QT_QPA_PLATFORM']})")
    print(
        table(
            ["measure", "value", "target", "met"],
            [
                [
                    "GUI timer lateness p99 during a 512 px run",
                    f"{p99:.1f} ms (median {p50:.1f} ms, {iterations} its)",
                    f"<= {LATENCY_P99_MS} ms",
                    "yes" if p99 <= LATENCY_P99_MS else "NO",
                ],
                [
                    "iterations/s with / without previews (256 px, medians of 3 pairs)",
                    f"{with_previews:.2f} / {without:.2f} (cost {cost * 100:+.1f} %)",
                    f"cost <= {PREVIEW_COST * 100:.0f} %",
                    "yes" if cost <= PREVIEW_COST else "NO",
                ],
                [
                    "launch to window shown",
                    f"{launch:.2f} s",
                    f"<= {LAUNCH_S} s",
                    "yes" if launch <= LAUNCH_S else "NO",
                ],
            ],
        )
    )


if __name__ == "__main__":
    main()
