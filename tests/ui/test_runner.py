"""The run's preview mailbox and the QImages it sends across threads."""

from __future__ import annotations

import numpy as np

from style_studio.core import Pictures, RunSpec, WeightsCache
from style_studio.core import settings as settings_mod
from style_studio.ui.qt_images import array_to_qimage
from style_studio.ui.runner import PREVIEW_READY, RenderSession, RunRequest


def test_the_latest_preview_wins_and_the_gui_is_signalled_once(qtbot):
    from PIL import Image

    job = RunRequest(RunSpec(Pictures(Image.new("RGB", (8, 8)), (Image.new("RGB", (8, 8)),)), settings_mod.DEFAULTS))
    session = RenderSession(job, WeightsCache())
    signals = []
    session._report = signals.append
    frames = [array_to_qimage(np.full((4, 6, 3), value, np.uint8)) for value in (10, 20, 30)]
    for frame in frames:
        session._post_preview(frame)
    assert signals == [PREVIEW_READY]  # one notification while the slot was full
    taken = session.take_preview()
    assert taken.pixelColor(0, 0).red() == 30
    assert session.take_preview() is None
    session._post_preview(frames[0])
    assert signals == [PREVIEW_READY] * 2


def test_a_preview_qimage_owns_its_pixels():
    array = np.full((5, 7, 3), 200, np.uint8)
    image = array_to_qimage(array)
    array[:] = 0
    del array
    assert (image.width(), image.height()) == (7, 5) and image.pixelColor(3, 2).red() == 200
