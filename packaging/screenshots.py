"""The README's screenshots, made from the real window: the bundled photo and painting, a run under way and the
finished picture, at the size the window opens at on a 1366×768 laptop screen and on a 1920×1080 one.

    .venv/bin/python packaging/screenshots.py --weights ../shared/weights/vgg19-hed-proxy.pth

Rerun it whenever the window changes. It runs offscreen with a settings store and data folders of its own (the
user's are untouched) and writes ``window-running.png``, ``window-1366x768.png`` and ``window-1920x1080.png`` to
``--out``. Without ``--weights`` the window paints with the untrained network, and says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCREENS = ((1366, 768), (1920, 1080))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", type=Path, help="a VGG19 weights file (.pth); default: untrained")
    parser.add_argument("--out", type=Path, default=HERE / "screenshots", help="where the PNG files go")
    parser.add_argument("--timeout", type=float, default=900, help="seconds the run may take")
    args = parser.parse_args(argv)
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    with tempfile.TemporaryDirectory(prefix="style-studio-shots-") as scratch:
        os.environ["STYLE_STUDIO_DATA"] = str(Path(scratch) / "data")
        os.environ["STYLE_STUDIO_CACHE"] = str(Path(scratch) / "cache")
        return _shoot(args.weights, args.out, args.timeout, Path(scratch))


def _shoot(weights: Path | None, out: Path, timeout: float, scratch: Path) -> int:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from style_studio.core import settings as settings_mod
    from style_studio.ui.app import create_application
    from style_studio.ui.main_window import DEFAULT_SIZE, MainWindow
    from style_studio.ui.state import RunStatus
    from style_studio.ui.store import Store

    app = create_application([sys.argv[0]])
    store = Store(QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat))
    choice = str(weights.resolve()) if weights is not None else settings_mod.UNTRAINED
    store.save_settings(dataclasses.replace(settings_mod.DEFAULTS, weights=choice))
    if weights is not None:
        store.save_weights_file(weights.resolve())
    window = MainWindow(store)
    out.mkdir(parents=True, exist_ok=True)

    def wait_until(done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise SystemExit(f"gave up waiting for {what} after {timeout:g} s")
            app.processEvents()
            time.sleep(0.02)

    def show_at(screen: tuple[int, int]) -> None:
        window.resize(min(screen[0], DEFAULT_SIZE[0]), min(screen[1], DEFAULT_SIZE[1]))
        window.reset_layout()
        window.show()
        settle = time.monotonic() + 1.0
        while time.monotonic() < settle:
            app.processEvents()
            time.sleep(0.02)

    def grab(name: str) -> None:
        path = out / name
        window.grab().save(str(path))
        print(f"wrote {path} ({window.width()}×{window.height()})")

    show_at(SCREENS[1])
    steps: list[int] = []
    window.controller.progressed.connect(lambda record: steps.append(record.step))
    window.commands.start.trigger()
    wait_until(lambda: len(steps) >= 60, "the run's previews")
    grab("window-running.png")
    wait_until(lambda: window.state.picture_run is RunStatus.IDLE and window.state.shown is not None, "the run")
    for screen in SCREENS:
        show_at(screen)
        grab(f"window-{screen[0]}x{screen[1]}.png")
    window.close()
    QApplication.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
