"""A setting is described once: its ``About`` makes the command line's option, the jobs file's key, the window's
control (its kind, label, range, step and place) and tooltip, and the check of its value. A field that lacks one of
them fails here."""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
import pytest
from PIL import Image
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QSpinBox

from style_studio.cli.parser import build_parser
from style_studio.core import (
    FEATHER,
    MAX_DPI,
    PRINT_DPI,
    STRENGTH,
    Region,
    RegionError,
    Regions,
    Settings,
    VideoOptions,
)
from style_studio.core import settings as settings_mod
from style_studio.core.about import About, _number_kind, described
from style_studio.core.about import about as described_as
from style_studio.core.jobs.batch import VIDEO_KEYS, BatchError, jobs_from_file
from style_studio.ui.controls import ControlsPanel
from style_studio.ui.inputs_panel import VideoOptionsBox
from style_studio.ui.pictures import InputImage
from style_studio.ui.regions_panel import RegionEditor, RegionsPanel
from style_studio.ui.settings_form import in_form
from style_studio.ui.state import BLEND_SHARE, Brush, WindowState
from style_studio.ui.widgets import LogSlider, StyleRow


def options_of(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {action.dest: action for action in sub.choices[command]._actions}


@pytest.mark.parametrize(("kind", "command"), [(Settings, "render"), (VideoOptions, "video")])
def test_every_field_has_help_an_option_a_jobs_file_key_and_a_check(kind: type, command: str) -> None:
    options = options_of(command)
    for field in dataclasses.fields(kind):
        about = field.metadata.get("about")
        assert isinstance(about, About) and about.help and about.tooltip, field.name
        if about.flag != "":
            assert field.name in options, f"{field.name} has no option in `style-studio {command}`"
            assert about.help in (options[field.name].help or ""), field.name
        if kind is VideoOptions:
            assert field.name in VIDEO_KEYS  # the jobs file's `video` table
        else:
            settings_mod.from_dict({field.name: settings_mod.to_dict(settings_mod.DEFAULTS)[field.name]})  # `settings`
        if _number_kind(field.type) is not None:
            assert about.low is not None, f"{field.name} is a number without a bound"
            assert about.check(field.name, "not a number", int) is not None


def test_a_value_out_of_its_range_is_refused_by_the_description_everywhere() -> None:
    about = settings_mod.about("size")
    with pytest.raises(settings_mod.SettingsError, match="size must be a whole number of pixels from 32 to 8192"):
        dataclasses.replace(settings_mod.DEFAULTS, size=int(about.high or 0) + 1).validate()
    assert VideoOptions(frame_iterations=0).problems() == [
        "frame_iterations must be a whole number from 1 to 100000, got 0"
    ]


def test_the_windows_controls_take_their_kind_range_and_tooltip_from_the_description(qtbot) -> None:
    panel = ControlsPanel(WindowState(settings_mod.DEFAULTS))
    qtbot.addWidget(panel)
    for name, (about, annotation) in in_form(Settings).items():
        widget = panel.widget(name)
        assert widget.toolTip() == about.tooltip, name
        if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
            scale = 100 if about.percent else 1
            assert widget.maximum() == pytest.approx((about.high or 0) * scale), name
            assert widget.minimum() == pytest.approx(0 if about.zero is not None else (about.low or 0) * scale), name
        if annotation == "bool":
            assert isinstance(widget, QCheckBox) and widget.text() == about.label, name
        if about.slider is not None and not about.control:
            assert isinstance(widget, LogSlider), name
    layer = panel.layer_sliders["relu1_1"]  # a layer's slider: linear over the description's range, in its steps
    assert layer.slider.maximum() * settings_mod.about("style_layers").step == pytest.approx(5.0)
    assert panel.print_dpi.maximum() == MAX_DPI == PRINT_DPI.high  # what a batch's --dpi accepts, not 2400
    assert panel.print_dpi.toolTip() == PRINT_DPI.tooltip and panel.print_dpi.specialValueText() == "Photo's own"


def test_the_regions_and_blend_controls_take_their_range_from_the_description_the_core_checks(qtbot) -> None:
    """A region's strength and the regions' edge are checked by the core and shown by the window from one
    description; the brush's and a style's blend share are the window's model's."""
    state = WindowState(settings_mod.DEFAULTS)
    panel = RegionsPanel(RegionEditor(state), state, lambda: ["style"])
    qtbot.addWidget(panel)
    assert (panel.strength.minimum(), panel.strength.maximum()) == (STRENGTH.low, STRENGTH.high)
    assert panel.strength.toolTip() == STRENGTH.tooltip
    assert panel.feather.maximum() == round((FEATHER.high or 0) / FEATHER.step)  # in steps of 0.001
    brush = described(Brush)
    assert (panel.brush_size.minimum(), panel.brush_size.maximum()) == (brush["radius"].low, brush["radius"].high)
    assert panel.softness.maximum() == round((brush["softness"].high or 0) / brush["softness"].step)
    with pytest.raises(RegionError, match="strength must be from 0 to 10"):
        sky = Region("sky", (255, 0, 0), strength=(STRENGTH.high or 0) + 0.5)
        Regions((sky,), np.full((1, 4, 4), 255, np.uint8)).check(1)
    row = StyleRow(InputImage(Image.new("RGB", (8, 8)), "style.png"))
    qtbot.addWidget(row)
    assert row.blend.maximum() == round((BLEND_SHARE.high or 0) / BLEND_SHARE.step) and row.blend_weight() == 1.0
    assert row.blend.toolTip() == BLEND_SHARE.tooltip


def test_the_seed_takes_every_value_its_description_allows(qtbot) -> None:
    """The window's seed was clamped to a spin box's 2**31 - 1; the description allows 2**63 - 1."""
    panel = ControlsPanel(WindowState(settings_mod.DEFAULTS))
    qtbot.addWidget(panel)
    largest = int(settings_mod.about("seed").high or 0)
    qtbot.keyClicks(panel.widget("seed"), "\b" * 3 + str(largest))
    assert panel.state.settings.seed == largest
    panel.state.set("seed", 2**40)
    assert panel.widget("seed").text() == str(2**40)


def test_the_video_options_form_is_made_from_their_descriptions_and_writes_the_state(qtbot) -> None:
    state = WindowState()
    box = VideoOptionsBox(state)
    qtbot.addWidget(box)
    about = described(VideoOptions)
    assert set(box.fields) == {name for name, a in about.items() if a.label}
    assert box.fields["frame_iterations"].widget.maximum() == about["frame_iterations"].high
    assert box.fields["temporal_weight"].widget.toolTip() == about["temporal_weight"].tooltip
    assert box.fields["frame_settle"].widget.specialValueText() == "Off"
    box.fields["frame_iterations"].widget.setValue(12)
    assert state.video.frame_iterations == 12
    state.load_video(VideoOptions(temporal_weight=4.0))
    assert box.fields["temporal_weight"].widget.value() == 4.0


def test_the_settings_the_form_leaves_out_are_edited_elsewhere() -> None:
    """The style list edits the blend; the step size is the command line's alone."""
    assert settings_mod.NAMES - set(in_form(Settings)) == {"style_blend", "step_size"}


def test_the_form_shows_the_everyday_settings_and_keeps_the_rest_under_more(qtbot) -> None:
    panel = ControlsPanel(WindowState(settings_mod.DEFAULTS))
    qtbot.addWidget(panel)
    panel.show()
    for name, (about, _) in in_form(Settings).items():
        inside_more = panel.more.isAncestorOf(panel.widget(name))
        assert inside_more is not about.everyday, name
    qtbot.waitExposed(panel)
    assert panel.widget("seed").visibleRegion().isEmpty() and not panel.widget("size").visibleRegion().isEmpty()
    panel.more.expand(animate=False)
    qtbot.waitUntil(lambda: not panel.widget("seed").visibleRegion().isEmpty())


def test_a_new_setting_gets_its_option_jobs_file_key_control_and_tooltip(qtbot, monkeypatch, tmp_path) -> None:
    """Described once, a new field appears everywhere: the command line, a jobs file, the window's form."""
    grain = dataclasses.field(
        default=0.5,
        metadata=described_as("how much of the canvas's grain shows", low=0, high=1, label="Canvas grain",
                               group="Picture", everyday=True, step=0.05, tip="The canvas's grain, over the picture."),
    )  # fmt: skip
    extended = dataclasses.make_dataclass("Extended", [("grain", "float", grain)], bases=(Settings,), frozen=True)
    monkeypatch.setattr(settings_mod, "Settings", extended)
    monkeypatch.setattr(settings_mod, "DEFAULTS", extended())

    option = options_of("render")["grain"]
    assert option.option_strings == ["--grain"] and "canvas's grain" in (option.help or "")

    for name in ("photo.png", "style.png"):
        Image.new("RGB", (64, 64)).save(tmp_path / name)
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_text(json.dumps({"settings": {"grain": 0.25},
                                     "jobs": [{"content": "photo.png", "styles": ["style.png"]}]}))  # fmt: skip
    (job,) = jobs_from_file(jobs_file, tmp_path / "out", extended())
    assert job.settings.grain == 0.25
    jobs_file.write_text(json.dumps({"settings": {"grain": 3}, "jobs": [{"content": "photo.png",
                                                                         "styles": ["style.png"]}]}))  # fmt: skip
    with pytest.raises(BatchError, match="grain must be a number from 0 to 1, got 3"):
        jobs_from_file(jobs_file, tmp_path / "out", extended())

    panel = ControlsPanel(WindowState(extended()))
    qtbot.addWidget(panel)
    control = panel.widget("grain")
    assert isinstance(control, QDoubleSpinBox) and control.toolTip() == "The canvas's grain, over the picture."
    assert control.singleStep() == 0.05 and control.maximum() == 1
    assert not panel.more.isAncestorOf(control)
    control.setValue(0.75)
    assert panel.state.settings.grain == 0.75


def test_the_windows_choice_boxes_offer_exactly_the_descriptions_choices(qtbot) -> None:
    panel = ControlsPanel(WindowState(settings_mod.DEFAULTS))
    qtbot.addWidget(panel)
    for name in ("optimizer", "init", "pooling", "style_loss"):
        box = panel.widget(name)
        its_about = settings_mod.about(name)
        assert tuple(box.itemData(i) for i in range(box.count())) == its_about.choices, name
        assert tuple(box.itemText(i) for i in range(box.count())) == its_about.choice_labels, name
        assert box.toolTip() == its_about.tooltip, name
