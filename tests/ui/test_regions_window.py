"""Regions in the window: painting with the mouse, undo, presets, exports dropped back, live painting."""

from __future__ import annotations

import numpy as np
from PIL import Image
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QKeySequence

from style_studio.core.io.imageio import read_metadata
from style_studio.core.objective.regions import from_document
from style_studio.ui.regions_panel import KEEP
from tests.conftest import SAMPLES
from tests.ui.test_window import drop, files, run_to_end, start_long_run


def drag(qtbot, view, start: QPointF, end: QPointF, steps: int = 8) -> None:
    """A left-button drag across the picture view, in the picture's relative coordinates."""
    target = view._target()

    def at(p: QPointF) -> QPoint:
        return QPoint(round(target.x() + p.x() * target.width()), round(target.y() + p.y() * target.height()))

    qtbot.mousePress(view, Qt.MouseButton.LeftButton, pos=at(start))
    for k in range(1, steps + 1):
        point = start + (end - start) * (k / steps)
        qtbot.mouseMove(view, at(point))
    qtbot.mouseRelease(view, Qt.MouseButton.LeftButton, pos=at(end))


def test_painting_a_region_with_the_mouse_then_undo_and_redo(qtbot, window):
    window.show()
    qtbot.waitExposed(window)
    window.painting.add_region()
    assert window.view.painting() and window.commands.paint.isChecked()
    drag(qtbot, window.view, QPointF(0.2, 0.5), QPointF(0.8, 0.5))
    painted = window.regions.regions.masks[0]
    height, width = painted.shape
    assert (height, width) == (300, 451)  # on the photo, at its size
    assert painted[150, 225] == 255 and painted[20, 225] == 0
    assert window.view.overlay("regions") is not None
    assert window.commands.undo.isEnabled() and window.commands.undo.text() == "Undo Paint"
    assert window.commands.undo.shortcut() == QKeySequence(QKeySequence.StandardKey.Undo)
    window.commands.undo.trigger()
    assert not window.regions.regions.masks.any()
    window.commands.redo.trigger()
    assert window.regions.regions.masks[0, 150, 225] == 255
    # The eraser (E) takes the paint away; undo brings it back.
    assert window.commands.eraser.shortcut() == QKeySequence("E")
    window.commands.eraser.trigger()
    assert window.state.brush.erasing and window.regions_panel.erase_button.isChecked()
    drag(qtbot, window.view, QPointF(0.2, 0.5), QPointF(0.8, 0.5))
    assert window.regions.regions.masks[0, 150, 225] == 0
    window.commands.undo.trigger()
    assert window.regions.regions.masks[0, 150, 225] == 255


def test_the_brush_keys_and_what_a_region_gets(qtbot, window):
    window.painting.add_region()
    size = window.state.brush.radius
    assert window.commands.brush_larger.shortcut() == QKeySequence("]")
    window.commands.brush_larger.trigger()
    assert window.state.brush.radius > size and window.regions_panel.brush_size.value() == window.state.brush.radius
    panel = window.regions_panel
    panel.gets.setCurrentIndex(panel.gets.findData(KEEP))
    panel.gets.activated.emit(panel.gets.currentIndex())
    assert window.regions.regions.regions[0].keep
    assert "keep the photo" in panel.list.item(0).text()
    window.commands.undo.trigger()
    assert not window.regions.regions.regions[0].keep
    assert QKeySequence("P") in window.commands.paint.shortcuts()


def paint_two_regions(window) -> None:
    """The left half to style 1, a face-sized patch kept; the rest unpainted."""
    editor = window.regions
    editor.add_region()
    editor.fill(0)
    masks = editor.regions.masks
    masks[0, :, 225:] = 0
    editor.add_region()
    window.state.set_brush("radius", 30)
    editor.begin_stroke(QPointF(0.75, 0.5))
    editor.end_stroke()
    panel = window.regions_panel
    panel.gets.setCurrentIndex(panel.gets.findData(KEEP))
    panel.gets.activated.emit(panel.gets.currentIndex())


def test_a_preset_keeps_the_regions_and_loading_it_brings_them_back(window, tmp_path):
    paint_two_regions(window)
    before = window.regions.regions
    assert window.files.save_preset(tmp_path / "regions.json")
    window.regions.set_photo(451, 300)
    assert not window.regions.regions
    assert window.files.load_preset(tmp_path / "regions.json")
    back = window.regions.regions
    assert back.regions == before.regions and np.array_equal(back.masks, before.masks)
    # Undo takes the loaded regions away again.
    window.commands.undo.trigger()
    assert not window.regions.regions


def test_a_render_with_regions_exported_and_dropped_back_gives_the_regions_again(qtbot, window, tmp_path):
    paint_two_regions(window)
    painted = window.regions.regions.copy()
    outcome = run_to_end(qtbot, window)
    assert outcome.error is None and outcome.regions is not None
    target = tmp_path / "result.png"
    with qtbot.waitSignal(window.documents.exportFinished, timeout=30_000):
        assert window.files.export_to(target)
    embedded = from_document(read_metadata(target))
    assert embedded is not None and embedded.regions == painted.regions
    window.regions.set_photo(451, 300)
    drop(window, files(target))
    assert window.regions.regions.regions == painted.regions
    assert np.array_equal(window.regions.regions.masks, painted.masks)


def test_a_mask_file_of_another_size_is_fitted_to_the_photo_with_a_notice(window, tmp_path):
    picture = np.zeros((100, 150, 3), np.uint8)
    picture[:50] = (230, 25, 75)
    picture[50:, :75] = (60, 180, 75)
    Image.fromarray(picture).save(tmp_path / "mask.png")
    assert window.painting.load_mask(tmp_path / "mask.png")
    assert len(window.regions.regions) == 2
    assert window.regions.size == (451, 300)
    assert "scaled to the photo's 451×300" in window.banner.text()
    (tmp_path / "bad.png").write_bytes(b"not a picture")
    assert not window.painting.load_mask(tmp_path / "bad.png")
    assert "cannot be read" in window.banner.text() and len(window.regions.regions) == 2


def test_a_new_photo_clears_the_regions_with_a_notice(window):
    paint_two_regions(window)
    drop(window.inputs.content_zone, files(SAMPLES / "content" / "coffee.png"))
    assert not window.regions.regions
    assert "regions were cleared" in window.banner.text()


def test_painting_during_a_run_reaches_the_run(qtbot, window):
    records = []
    window.controller.progressed.connect(records.append)
    start_long_run(qtbot, window)
    window.regions.add_region()
    window.regions.fill(0)
    painted_at = len(records)
    qtbot.waitUntil(lambda: len(records) > painted_at + 2, timeout=30_000)
    with qtbot.waitSignal(window.controller.finished, timeout=30_000) as blocker:
        window.commands.stop.trigger()
    taken, painted = blocker.args[1].regions, window.state.regions_for_run()
    assert taken is not None and painted is not None and taken.digest() == painted.digest()


def test_the_style_map_is_drawn_over_the_preview_only_while_asked_for(qtbot, window):
    window.commands.style_map.setChecked(False)
    run_to_end(qtbot, window)
    assert window.view.overlay("style map") is None
    assert window.regions_panel.map_layer.count() == 5
    assert window.commands.style_map.shortcut() == QKeySequence("M")
    window.commands.style_map.trigger()
    assert window.state.style_map == window.regions_panel.map_layer.currentText()
    run_to_end(qtbot, window)
    shown = window.view.overlay("style map")
    assert shown is not None and not shown.isNull()
    window.commands.style_map.trigger()
    assert window.view.overlay("style map") is None and window.state.style_map is None


def test_the_style_map_is_the_states_and_the_command_follows_it(window):
    """A style map set in the state (not by the command) checks the command; the runs read the state's."""
    layer = window.regions_panel.map_layer.itemText(0)
    window.state.set_style_map(layer)
    assert window.commands.style_map.isChecked()
    window.state.set_style_map(None)
    assert not window.commands.style_map.isChecked()
    window.commands.style_map.trigger()
    assert window.state.style_map == window.regions_panel.map_layer.currentText()


def test_a_style_map_asked_for_during_a_run_reaches_the_run(qtbot, window):
    """The run reads the state's layer (no copy of it elsewhere): set during the run, its records carry the map."""
    window.state.set_style_map(None)
    records = []
    window.controller.progressed.connect(records.append)
    start_long_run(qtbot, window)
    window.state.set_style_map(window.regions_panel.map_layer.itemText(0))
    qtbot.waitUntil(lambda: any(r.style_map is not None for r in records), timeout=30_000)
    with qtbot.waitSignal(window.controller.finished, timeout=30_000):
        window.commands.stop.trigger()


def test_the_regions_overlay_shows_while_painting_and_on_its_toggle_only(qtbot, window):
    window.show()
    qtbot.waitExposed(window)
    window.painting.add_region()
    drag(qtbot, window.view, QPointF(0.2, 0.5), QPointF(0.8, 0.5))
    assert window.view.overlay("regions") is not None  # painting: shown
    window.commands.paint.trigger()  # done painting, the panel still open
    assert not window.view.painting() and window.regions_dock.isVisible()
    assert window.view.overlay("regions") is None  # the picture is seen clean
    assert window.commands.show_regions.shortcut() == QKeySequence("R")
    window.commands.show_regions.trigger()
    assert window.view.overlay("regions") is not None
    window.commands.show_regions.trigger()
    assert window.view.overlay("regions") is None
