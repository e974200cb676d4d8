"""Unfinished runs in the window: kept when it closes mid-run, offered at the next start, resumed or discarded."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt

from style_studio.core.progress import FINISHED
from style_studio.core.run.checkpoints import CheckpointStore
from tests.ui.conftest import FAST

LONG = dataclasses.replace(FAST, size=64, iterations=40)


def close_during_a_run(qtbot, window, steps=3):
    window.controls.set_settings(LONG)
    seen = []
    window.controller.progressed.connect(lambda record: seen.append(record.step))
    window.commands.start.trigger()
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
    assert blocker.args[1].outcome == FINISHED
    # It went on where it stood, with the run's own settings and pictures.
    assert min(s for s in steps if s > 0) == stood + 1 and max(steps) == 40
    assert second.state.settings == checkpoint.settings
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
    window.commands.start.trigger()
    qtbot.waitUntil(lambda: len(seen) >= 3, timeout=30_000)
    assert CheckpointStore().unfinished()  # saved while it runs
    with qtbot.waitSignal(window.controller.finished, timeout=30_000):
        window.commands.stop.trigger()
    assert CheckpointStore().unfinished() == []
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        window.commands.start.trigger()
    assert CheckpointStore().unfinished() == []


def stopped_run(tiny, content, styles, settings):
    """A core run stopped after 3 iterations, its checkpoint in the user's store (as the CLI leaves one)."""
    from style_studio.core.run.cancel import CancelToken
    from tests.runs import run

    token = CancelToken()
    names = ("chelsea.png", *(f"style-{n}.png" for n in range(1, len(styles) + 1)))

    def stop_after_three(record):
        if record.step >= 3:
            token.cancel()

    run(
        content, styles, settings, tiny, names=names, hear=stop_after_three, cancel=token, checkpoints=CheckpointStore()
    )
    (checkpoint,) = CheckpointStore().unfinished()
    return checkpoint


def test_a_run_whose_blend_the_sliders_show_rescaled_resumes_with_its_own_settings(
    qtbot, make_window, monkeypatch, tiny, content_image, style_image, second_style_image
):
    # The blend sliders show 0.6/0.3 as 1.0/0.5; a style weight past the slider's end is clamped.
    monkeypatch.setenv("STYLE_STUDIO_CHECKPOINT_SECONDS", "0")
    settings = dataclasses.replace(LONG, style_blend=(0.6, 0.3), style_weight=5000.0)
    checkpoint = stopped_run(tiny, content_image, [style_image, second_style_image], settings)

    window = make_window(settings=None)
    steps = []
    window.controller.progressed.connect(lambda record: steps.append(record.step))
    with qtbot.waitSignal(window.controller.finished, timeout=60_000) as blocker:
        click(qtbot, window.banner, "Resume")
    outcome = blocker.args[1]
    assert outcome.error is None and outcome.outcome == FINISHED
    assert min(s for s in steps if s > 0) == checkpoint.position.step + 1
    assert outcome.settings.style_blend == (0.6, 0.3) and outcome.settings.style_weight == 5000.0


def test_a_refused_resume_keeps_the_checkpoint(qtbot, make_window, monkeypatch, tiny, content_image, style_image):
    monkeypatch.setenv("STYLE_STUDIO_CHECKPOINT_SECONDS", "0")
    checkpoint = stopped_run(tiny, content_image, [style_image], LONG)
    # Its copy of the photo no longer matches the hash the run started with: the engine refuses to go on.
    content_image.transpose(0).save(checkpoint.folder / "content.png")

    window = make_window(settings=None)
    with qtbot.waitSignal(window.controller.finished, timeout=60_000) as blocker:
        click(qtbot, window.banner, "Resume")
    assert "cannot be resumed: the content image is not the one the run started with" in blocker.args[1].error
    (kept,) = CheckpointStore().unfinished()
    assert kept.run_id == checkpoint.run_id and kept.position == checkpoint.position
