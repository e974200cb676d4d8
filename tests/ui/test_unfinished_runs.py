"""Unfinished runs in the window: kept when it closes mid-run, offered at the next start, resumed or discarded."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt

from style_studio.core.checkpoints import CheckpointStore
from tests.ui.conftest import FAST

LONG = dataclasses.replace(FAST, size=64, iterations=40)


def close_during_a_run(qtbot, window, steps=3):
    window.controls.set_settings(LONG)
    seen = []
    window.controller.progressed.connect(lambda record: seen.append(record.step))
    window.start()
    qtbot.waitUntil(lambda: len(seen) >= steps, timeout=30_000)
    window.close()


def click(qtbot, banner, label):
    (button,) = [b for b in banner.buttons if b.text() == label]
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_closing_during_a_run_keeps_it_and_the_next_start_resumes_it_to_the_end(qtbot, make_window):
    first = make_window()
    close_during_a_run(qtbot, first)
    (checkpoint,) = CheckpointStore().unfinished()
    stood = checkpoint.position.step
    assert stood >= 3

    second = make_window(settings=None)
    assert "An unfinished run can be resumed: chelsea.png (64 px), stopped at iteration" in second.banner.text()
    steps = []
    second.controller.progressed.connect(lambda record: steps.append(record.step))
    with qtbot.waitSignal(second.controller.finished, timeout=60_000) as blocker:
        click(qtbot, second.banner, "Resume")
    assert blocker.args[0].stop_reason == "finished"
    # It went on where it stood, with the run's own settings and pictures.
    assert min(s for s in steps if s > 0) == stood + 1 and max(steps) == 40
    assert second.current_settings() == checkpoint.settings
    assert second.inputs.content.name == "chelsea.png"
    assert len(second.history.entries) == 1
    # Finished: its result is in the history, and nothing is left to resume.
    assert CheckpointStore().unfinished() == []


def test_an_unfinished_run_can_be_discarded(qtbot, make_window):
    close_during_a_run(qtbot, make_window())
    window = make_window(settings=None)
    click(qtbot, window.banner, "Discard")
    assert CheckpointStore().unfinished() == []
    assert window.banner.text() == ""
    assert make_window(settings=None).banner.text() == ""


def test_a_run_that_finishes_or_is_stopped_leaves_nothing_to_resume(qtbot, make_window, monkeypatch):
    monkeypatch.setenv("STYLE_STUDIO_CHECKPOINT_SECONDS", "0")
    window = make_window()
    window.controls.set_settings(LONG)
    seen = []
    window.controller.progressed.connect(lambda record: seen.append(record.step))
    window.start()
    qtbot.waitUntil(lambda: len(seen) >= 3, timeout=30_000)
    assert CheckpointStore().unfinished()  # saved while it runs
    with qtbot.waitSignal(window.controller.finished, timeout=30_000):
        window.stop()
    assert CheckpointStore().unfinished() == []
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        window.start()
    assert CheckpointStore().unfinished() == []
