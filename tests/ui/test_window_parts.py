"""The window's parts work without the window: each gets what it needs, and tests hand it exactly that."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from PySide6.QtWidgets import QWidget

from style_studio.core import RenderQueue, WeightsCache
from style_studio.core.run.checkpoints import CheckpointStore
from style_studio.ui.feedback import Feedback
from style_studio.ui.pictures import InputImage
from style_studio.ui.queue_intake import QueueIntake
from style_studio.ui.queue_panel import QueueController
from style_studio.ui.runner import RunController
from style_studio.ui.state import WindowState
from tests.ui.conftest import FAST


def test_the_queue_intake_queues_the_states_settings_and_says_why_it_cannot(qtbot, tmp_path, store, tiny,
                                                                            content_image, style_image):  # fmt: skip
    state = WindowState(FAST)  # the intake takes the state, no panel: the pictures are the state's
    parent = QWidget()
    qtbot.addWidget(parent)
    controller = RunController(weights=WeightsCache(lambda _: tiny), checkpoints=CheckpointStore(tmp_path / "runs"))
    queue = QueueController(RenderQueue(tmp_path / "queue"), controller)
    queue.set_paused(True)  # kept waiting: this test is about what goes in
    told: list[tuple[str, str]] = []
    shown: list[bool] = []
    feedback = Feedback(lambda t: told.append(("info", t)), lambda t: told.append(("error", t)), lambda t, ms: None)
    intake = QueueIntake(state=state, queue=queue, store=store,
                         show_queue=lambda: shown.append(True), feedback=feedback, parent=parent)  # fmt: skip

    assert not intake.add(tmp_path / "out")
    assert told == [("error", "Add a content image and at least one style image first.")] and not shown

    state.set_photo(InputImage(content_image, "photo.png"))
    state.set_styles((InputImage(style_image, "painting.png"),))
    state.set("style_weight", 7.0)
    assert intake.add(tmp_path / "out")
    (item,) = list(queue.queue)
    assert item.job.settings == dataclasses.replace(FAST, style_weight=7.0) and shown == [True]
    controller.shutdown()


def test_the_run_bars_text_is_one_dark_colour_over_its_fill_and_past_it(qtbot):
    from PySide6.QtGui import QImage

    from style_studio.ui.run_bar import RunBar

    bar = RunBar()
    qtbot.addWidget(bar)
    bar.resize(420, 60)
    bar.show()
    bar.show_clip_progress(2, 5, 3, 10, 12.0)
    bar.progress.setValue(bar.progress.maximum() * 2 // 5)  # 40 %: the fill ends inside the centred text
    image = bar.progress.grab().toImage().convertToFormat(QImage.Format.Format_Grayscale8)
    width, height = image.width(), image.height()
    rows = [np.frombuffer(image.constScanLine(y), np.uint8, image.bytesPerLine())[:width] for y in range(height)]
    grey = np.stack(rows)
    middle = grey[height // 2 - 4 : height // 2 + 4]  # the letters' rows, clear of the bar's border
    filled, past = middle[:, 6 : int(width * 0.38)], middle[:, int(width * 0.42) : width - 6]
    # Dark letters on the fill as beyond it (no light letters on a dark fill): no word cut in two colours.
    assert (filled < 90).any() and (past < 90).any()
    assert not (filled > 230).any()


def test_the_figures_under_the_run_bar_stand_apart_and_uncut(qtbot):
    # Seen at 1366×768: "ETA 43 min 42 s∇ 0.111", two figures run together 2 px apart.
    from style_studio.ui.run_bar import RunBar

    bar = RunBar()
    qtbot.addWidget(bar)
    bar.resize(400, 60)
    bar.show()
    bar.rate_label.setText("12 s/it")
    bar.eta_label.setText("ETA 43 min 42 s")
    bar.grad_label.setText("∇ 0.111")
    figures = (bar.rate_label, bar.eta_label, bar.grad_label)

    def laid_out() -> bool:  # each label as wide as its text, once the layout has taken the new texts
        return all(label.width() >= label.fontMetrics().horizontalAdvance(label.text()) for label in figures)

    qtbot.waitUntil(laid_out)
    for left, right in itertools.pairwise(figures):
        text_end = left.geometry().left() + left.fontMetrics().horizontalAdvance(left.text())
        assert right.geometry().left() - text_end >= 10, (left.text(), right.text())
