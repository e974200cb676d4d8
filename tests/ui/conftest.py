"""Window tests: offscreen, an isolated QSettings file, and no thread may outlive a test."""

from __future__ import annotations

import dataclasses
import weakref

import pytest
from PySide6.QtCore import QSettings, QThread

from style_studio.core import settings as settings_mod

FAST = dataclasses.replace(settings_mod.DEFAULTS, size=48, iterations=6, weights="untrained")

# Every QThread started from Python is noted here, so that the check below needs
# no scan of every object in the process (that took 0.2 s a test once torch was loaded).
_started_threads: weakref.WeakSet[QThread] = weakref.WeakSet()
_start = QThread.start


def _noted_start(thread: QThread, *args: object) -> None:
    _started_threads.add(thread)
    _start(thread, *args)


QThread.start = _noted_start  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _no_dangling_qthreads(qapp):
    """Fail any test that leaves a QThread running (after napari's _dangling_qthreads)."""
    yield
    qapp.processEvents()
    running = [t for t in list(_started_threads) if t.isRunning()]
    for thread in running:
        thread.quit()
        thread.wait(5000)
    assert not running, f"QThread(s) left running: {[t.objectName() for t in running]}"


@pytest.fixture
def store(tmp_path):
    from style_studio.ui.store import Store

    return Store(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))


@pytest.fixture(scope="session")
def tiny_when_untrained(tiny):
    """The window's weights: the tiny test encoder for "untrained", the real loader for anything else."""
    from style_studio.core.network.weights import UNTRAINED, load_weights

    return lambda choice: tiny if choice == UNTRAINED else load_weights(choice)


@pytest.fixture
def make_window(qtbot, store, tiny_when_untrained):
    from style_studio.core import WeightsCache
    from style_studio.ui.main_window import MainWindow

    def make(settings: settings_mod.Settings | None = FAST, **kwargs):
        kwargs.setdefault("weights", WeightsCache(tiny_when_untrained))
        kwargs.setdefault("instant_look", False)  # its own tests ask for it: elsewhere it would race the test
        window = MainWindow(store, **kwargs)
        qtbot.addWidget(window)
        if settings is not None:
            window.controls.set_settings(settings)
        return window

    return make


@pytest.fixture
def window(make_window):
    return make_window()


@pytest.fixture
def files(tmp_path):
    """A photo, another photo, a style and a two-region mask, as files of their own."""
    import numpy as np
    from PIL import Image

    from tests.conftest import SAMPLES

    photo, other, style, mask = (tmp_path / n for n in ("photo.png", "other.png", "style.png", "mask.png"))
    Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB").resize((72, 48)).save(photo)
    Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB").resize((48, 72)).save(other)
    Image.open(SAMPLES / "style" / "starry_night.jpg").convert("RGB").resize((64, 52)).save(style)
    plane = np.zeros((48, 72, 3), np.uint8)
    plane[:, 36:] = (255, 255, 255)
    Image.fromarray(plane).save(mask)
    return photo, other, style, mask
