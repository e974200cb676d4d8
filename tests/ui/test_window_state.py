"""The window stands on a Qt-free state: what the commands may do follows from it alone, and it says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PIL import Image

from style_studio.core import described
from style_studio.ui.pictures import ClipFrameRef, HistoryEntry, InputImage
from style_studio.ui.state import Brush, RunStatus, WindowState
from tests.ui.conftest import FAST

PHOTO = InputImage(Image.new("RGB", (64, 48), "gray"), "photo.png")
STYLE = InputImage(Image.new("RGB", (32, 32), "blue"), "style.png")
CLIP = InputImage(Image.new("RGB", (64, 48)), "clip.mp4", clip=ClipFrameRef(0, 10, 25.0))


def result() -> HistoryEntry:
    return HistoryEntry(Image.new("RGB", (64, 48), "red"), FAST, "untrained", "finished")


def commands(state: WindowState) -> dict[str, bool]:
    return {
        "start": state.can_start,
        "stop": state.can_stop,
        "export": state.can_export,
        "video": state.can_render_video,
    }


def test_start_needs_a_photo_and_a_style_and_no_run_that_cannot_hand_over():
    state = WindowState(FAST)
    told: list[bool] = []
    state.commands_changed.connect(lambda: told.append(True))
    assert commands(state) == {"start": False, "stop": False, "export": False, "video": False}
    state.set_photo(PHOTO)
    state.set_styles((STYLE,))
    assert state.ready and state.can_start and len(told) == 2
    state.set_picture_run(RunStatus.RUNNING)
    assert not state.can_start and state.can_stop
    state.set_picture_run(RunStatus.STOPPING)  # Start again at once: it waits for the stopping run
    assert state.can_start and not state.can_stop
    state.set_picture_run(RunStatus.STOPPING)
    assert len(told) == 4  # the same status again says nothing
    state.set_video_run(RunStatus.RUNNING)
    assert not state.can_start and state.can_stop


def test_export_follows_the_result_shown_and_waits_for_the_export_under_way():
    state = WindowState(FAST)
    shown: list[object] = []
    state.shown_changed.connect(shown.append)
    entry = result()
    state.show(entry)
    assert state.shown is entry and state.can_export and shown == [entry]
    state.set_exporting(True)
    assert not state.can_export
    state.set_exporting(False)
    assert state.can_export


def test_a_new_photo_shows_the_photo_instead_of_a_result_made_from_the_old_one():
    state = WindowState(FAST)
    state.set_photo(PHOTO)
    state.show(result())
    heard: list[str] = []
    state.shown_changed.connect(lambda entry: heard.append(f"shown {entry}"))
    state.photo_changed.connect(lambda photo: heard.append(f"photo {photo.name}"))
    state.set_photo(CLIP)
    assert state.shown is None and not state.can_export
    assert heard == ["shown None", "photo clip.mp4"]  # the photo's listeners may draw over it
    assert state.can_render_video
    state.set_video_run(RunStatus.RUNNING)
    assert not state.can_render_video


def test_the_print_resolution_is_the_states_and_the_panel_shows_it_both_ways(qtbot):
    from style_studio.ui.controls import ControlsPanel

    state = WindowState(FAST)
    panel = ControlsPanel(state)
    qtbot.addWidget(panel)
    panel.print_dpi.setValue(300)
    assert state.print_dpi == 300
    state.set_print_dpi(600)
    assert panel.print_dpi.value() == 600


def test_the_state_and_its_pictures_import_no_qt():
    code = (
        "import sys, style_studio.ui.state, style_studio.ui.pictures; "
        "print(any(m.startswith('PySide6') for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_the_inputs_panel_shows_the_pictures_the_state_is_given(qtbot) -> None:
    """A helper (a resumed run, a dropped photo) gives the state its pictures; the panel's rows follow, keeping
    the blend of a style that stays."""
    from style_studio.ui.inputs_panel import InputsPanel

    state = WindowState(FAST)
    panel = InputsPanel(state)
    qtbot.addWidget(panel)
    other = InputImage(Image.new("RGB", (32, 32), "red"), "other.png")
    state.set_photo(PHOTO)
    state.set_styles((STYLE, other))
    assert [row.item for row in panel.style_rows] == [STYLE, other]
    panel.style_rows[1].blend.setValue(40)
    assert state.settings.style_blend == (1.0, 0.4)
    state.set_styles((other,))  # the first style removed elsewhere
    assert [row.item for row in panel.style_rows] == [other] and panel.style_rows[0].blend_weight() == 0.4
    assert state.settings.style_blend == ()  # one style: its blend is the whole
    panel.remove_style(panel.style_rows[0])  # the row's button: the state loses it
    assert state.styles == () and panel.style_rows == []


def test_a_picture_the_state_refuses_says_why_for_the_user() -> None:
    state = WindowState(FAST)
    assert state.refusal(CLIP, "style") == "clip.mp4 is a video: a style is a picture (a painting, a texture)"
    thin = InputImage(Image.new("RGB", (400, 2)), "thin.png")
    assert "thin.png: the content image (400×2)" in (state.refusal(thin, "content") or "")
    assert state.refusal(PHOTO, "content") is None


def test_the_regions_a_run_takes_are_the_states_painted_ones_copied() -> None:
    import numpy as np

    from style_studio.core import Region, Regions

    state = WindowState(FAST)
    assert state.regions_for_run() is None
    masks = np.zeros((2, 48, 64), np.uint8)
    masks[0, :, :32] = 255  # the first painted, the second added but not painted yet
    regions = Regions((Region("sky", (255, 0, 0)), Region("sea", (0, 0, 255))), masks)
    state.set_regions(regions)
    taken = state.regions_for_run()
    assert taken is not None and [r.name for r in taken.regions] == ["sky"]
    masks[0, :, :] = 0  # painting on goes on in the editor's masks: the run's copy stays
    assert taken.masks[0].max() == 255
    assert [r.name for r in state.regions_for_run(painted_only=False).regions] == ["sky", "sea"]


def test_the_brush_the_eraser_and_the_region_painted_are_the_states_each_with_its_event() -> None:
    """What the user edits to paint lives in the model: each field says it changed, once, by name."""
    state = WindowState(FAST)
    heard: list[tuple[str, object]] = []
    state.brush_changed.connect(lambda name, value: heard.append((name, value)))
    state.region_selected.connect(lambda index: heard.append(("selected", index)))
    state.mask_changed.connect(lambda mask: heard.append(("mask", mask)))
    state.set_brush("radius", 30)
    state.set_brush("radius", 30)  # the same again says nothing
    state.set_brush("softness", 0.2)
    state.set_brush("erasing", True)
    state.select_region(1)
    state.set_mask(Path("mask.png"))
    state.set_mask(None)
    assert heard == [("radius", 30), ("softness", 0.2), ("erasing", True), ("selected", 1),
                     ("mask", Path("mask.png")), ("mask", None)]  # fmt: skip
    assert state.brush == Brush(radius=30, softness=0.2, erasing=True) and state.brush.hardness == 0.8
    assert state.selected_region == 1


def test_the_brush_grows_and_shrinks_within_its_described_range() -> None:
    about = described(Brush)["radius"]
    assert Brush(radius=20).resized(1.25) == 26 and Brush(radius=20).resized(0.8) == 16
    assert Brush(radius=int(about.high or 0)).resized(1.25) == about.high
    assert Brush(radius=1).resized(0.8) == about.low


def test_the_regions_panel_writes_the_states_brush_and_selection_and_shows_them(qtbot) -> None:
    """The panel and the editor read and write the model; undo stays the editor's."""
    from style_studio.ui.regions_panel import RegionEditor, RegionsPanel

    state = WindowState(FAST)
    editor = RegionEditor(state)
    panel = RegionsPanel(editor, state, lambda: ["style"])
    qtbot.addWidget(panel)
    editor.set_photo(64, 48)
    panel.brush_size.setValue(40)
    panel.softness.setValue(25)
    assert state.brush.radius == 40 and state.brush.softness == 0.25
    state.set_brush("radius", 12)
    assert panel.brush_size.value() == 12
    panel.erase_button.setChecked(True)
    assert state.brush.erasing and panel.paint_button.isChecked()
    panel.paint_button.setChecked(False)  # done painting: the eraser is put down too
    assert not state.brush.erasing and not panel.erase_button.isChecked()
    panel.add_button.click()
    panel.add_button.click()
    assert state.selected_region == 1 and panel.list.currentRow() == 1
    panel.list.setCurrentRow(0)
    assert state.selected_region == 0
    state.select_region(1)
    assert panel.list.currentRow() == 1
    editor.undo_stack.undo()  # the second region goes: the selection follows the regions there are
    assert state.selected_region == 0 and panel.list.currentRow() == 0
