"""The window's settings stand on a Qt-free state: a widget writes one field, listeners hear that field only."""

from __future__ import annotations

import dataclasses

from style_studio.core import settings as settings_mod
from style_studio.ui.controls import ControlsPanel
from style_studio.ui.state import SettingsState, WindowState


def heard(state: SettingsState) -> list[tuple[str, object]]:
    events: list[tuple[str, object]] = []
    state.setting_changed.connect(lambda name, value: events.append((name, value)))
    return events


def test_the_state_emits_the_one_field_that_changed_and_nothing_for_the_same_value():
    state = SettingsState()
    events = heard(state)
    state.set("style_weight", 5.0)
    state.set("style_weight", 5.0)
    assert events == [("style_weight", 5.0)]
    assert state.settings.style_weight == 5.0
    state.load(dataclasses.replace(settings_mod.DEFAULTS, size=640, seed=3))
    assert events[1:] == [("size", 640), ("style_weight", 3.0), ("seed", 3)]


def test_a_slider_writes_its_one_setting_and_a_loaded_document_shows_in_every_widget(qtbot):
    state = WindowState()
    panel = ControlsPanel(state)
    qtbot.addWidget(panel)
    events = heard(state)
    panel.widget("style_weight").spin.setValue(50)
    panel.layer_sliders["relu2_1"].slider.setValue(0)
    assert [name for name, _ in events] == ["style_weight", "style_layers"]
    assert state.settings.style_weight == 50 and "relu2_1" not in dict(state.settings.style_layers)
    loaded = dataclasses.replace(settings_mod.DEFAULTS, size=700, optimizer="adam", style_loss="gaussian")
    state.load(loaded)
    assert (
        panel.widget("size").value(),
        panel.widget("optimizer").currentData(),
        panel.widget("style_loss").currentData(),
    ) == (
        700,
        "adam",
        "gaussian",
    )
    assert panel.settings() == loaded


def test_only_a_setting_that_shapes_the_plan_makes_the_window_plan_again(qtbot, window, monkeypatch):
    planned = []
    monkeypatch.setattr(window.runs, "update_needs", lambda: planned.append(True))
    window.controls.widget("style_weight").spin.setValue(40)
    window.controls.widget("tv_weight").spin.setValue(0.5)
    assert planned == []
    window.controls.widget("size").setValue(window.controls.widget("size").value() + 64)
    assert planned == [True]
    assert window.state.settings.style_weight == 40


def test_a_preset_from_the_settings_menu_shows_in_the_controls_and_keeps_the_users_size(qtbot, window):
    window.controls.widget("size").setValue(320)
    window.controls.widget("style_weight").spin.setValue(40)
    window.commands.presets["quick"].trigger()
    settings = window.state.settings
    assert settings.first_scale == 128 and settings.style_loss == "gaussian"
    assert (settings.size, settings.style_weight) == (320, 40)
    assert (
        window.controls.widget("first_scale").value() == 128
        and window.controls.widget("style_loss").currentData() == "gaussian"
    )
    assert window.controls.schedule.text().startswith("161 → 227 → 320 px")  # starts small, steps up
    window.commands.presets["default"].trigger()
    assert window.state.settings.first_scale == 192 and window.controls.widget("first_scale").value() == 192
    assert window.controls.schedule.text() == "320 px · 150 iterations"  # under twice the first scale: one
    window.controls.widget("size").setValue(512)
    assert window.controls.schedule.text() == "256 → 512 px · 150 + 75 iterations"
    assert window.controls.widget("first_scale").isEnabled()
    window.controls.widget("scales").setValue(1)  # a number of scales set: the first scale no longer decides
    assert not window.controls.widget("first_scale").isEnabled()
    assert window.controls.schedule.text() == "512 px · 150 iterations"


def _wheel_down(widget) -> None:
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    centre = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(centre, widget.mapToGlobal(centre), QPoint(), QPoint(0, -120), Qt.MouseButton.NoButton,
                        Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)  # fmt: skip
    QApplication.sendEvent(widget, event)


def test_the_wheel_scrolls_the_settings_past_a_number_it_was_not_aimed_at(qtbot) -> None:
    """Scrolling down the settings over the size box used to shrink the picture to 32 px on the way."""
    state = WindowState(settings_mod.DEFAULTS)
    panel = ControlsPanel(state)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    size = panel.widget("size")
    _wheel_down(size)
    _wheel_down(panel.widget("init"))
    assert (state.settings.size, state.settings.init) == (settings_mod.DEFAULTS.size, settings_mod.DEFAULTS.init)
    panel.activateWindow()
    size.setFocus()
    qtbot.waitUntil(size.hasFocus)
    _wheel_down(size)  # clicked into, it takes the wheel
    assert state.settings.size < settings_mod.DEFAULTS.size


def test_each_layer_slider_shows_the_patch_of_the_style_its_layer_sees(qtbot) -> None:
    """A shallow layer carries a colour and the finest grain, a deep one whole shapes: each slider shows as much of
    the painting as its layer sees, at the size the run gives the painting."""
    from PIL import Image, ImageDraw

    from style_studio.ui.pictures import InputImage

    def brightness(slider) -> float:
        image = slider.patch.pixmap().toImage()
        return sum(image.pixelColor(x, y).lightness() for x in range(4, 16) for y in range(4, 16)) / 144

    state = WindowState(settings_mod.DEFAULTS)
    panel = ControlsPanel(state)
    qtbot.addWidget(panel)
    shallow, deep = panel.layer_sliders["relu1_1"], panel.layer_sliders["relu5_1"]
    assert shallow.patch.pixmap().isNull() and "about 3 px" in shallow.toolTip()
    painting = Image.new("RGB", (512, 512))  # black, with a white dot of 8 px in its middle
    ImageDraw.Draw(painting).rectangle((252, 252, 259, 259), fill="white")
    state.set_styles((InputImage(painting, "dot.png"),))
    assert brightness(shallow) > 200 and brightness(deep) < 50  # the dot fills one, is lost in the other
    assert "about 156 px" in deep.toolTip() and "512 px" in deep.toolTip()
    state.set("size", 256)
    assert "256 px" in deep.toolTip()
