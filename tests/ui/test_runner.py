"""The worker's preview mailbox and the QImages it sends across threads."""

from __future__ import annotations

import numpy as np

from style_studio.core import settings as settings_mod
from style_studio.ui.qt_images import array_to_qimage
from style_studio.ui.runner import RenderJob, RenderWorker, WeightsCache


def test_the_latest_preview_wins_and_the_gui_is_signalled_once(qtbot):
    from PIL import Image

    job = RenderJob(Image.new("RGB", (8, 8)), (Image.new("RGB", (8, 8)),), settings_mod.DEFAULTS)
    worker = RenderWorker(job, WeightsCache())
    signals = []
    worker.preview_available.connect(lambda: signals.append(1))
    frames = [array_to_qimage(np.full((4, 6, 3), value, np.uint8)) for value in (10, 20, 30)]
    for frame in frames:
        worker._post_preview(frame)
    assert len(signals) == 1  # one notification while the slot was full
    taken = worker.take_preview()
    assert taken.pixelColor(0, 0).red() == 30
    assert worker.take_preview() is None
    worker._post_preview(frames[0])
    assert len(signals) == 2


def test_a_preview_qimage_owns_its_pixels():
    array = np.full((5, 7, 3), 200, np.uint8)
    image = array_to_qimage(array)
    array[:] = 0
    del array
    assert (image.width(), image.height()) == (7, 5) and image.pixelColor(3, 2).red() == 200
