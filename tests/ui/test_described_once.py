"""A setting is described once: its ``About`` makes the command line's option, the jobs file's key, the window's
tooltip and range, and the check of its value. A field that lacks one of them fails here."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from style_studio.cli.parser import build_parser
from style_studio.core import MAX_DPI, Settings, VideoOptions
from style_studio.core import settings as settings_mod
from style_studio.core.about import About, _number_kind, described
from style_studio.core.jobs.batch import VIDEO_KEYS
from style_studio.ui.controls import ControlsPanel
from style_studio.ui.inputs_panel import VideoOptionsBox


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


def test_the_windows_fields_take_their_range_and_tooltip_from_the_description(qtbot) -> None:
    panel = ControlsPanel(settings_mod.DEFAULTS)
    qtbot.addWidget(panel)
    assert set(panel.bounded) >= {"size", "iterations", "scales", "finer_iterations", "tile", "seed", "style_scale"}
    for name, spin in panel.bounded.items():
        about = settings_mod.about(name)
        scale = 100 if name == "finer_iterations" else 1
        assert spin.toolTip() == about.tooltip, name
        assert spin.maximum() == pytest.approx(min((about.high or 0) * scale, 2**31 - 1)), name
        low = 0 if about.zero is not None else (about.low or 0) * scale
        assert spin.minimum() == pytest.approx(low), name
    for name, widget in [("content_weight", panel.content_weight), ("pooling", panel.pooling),
                         ("preserve_colors", panel.preserve_colors), ("weights", panel.weights)]:  # fmt: skip
        assert widget.toolTip() == settings_mod.about(name).tooltip, name
    assert panel.print_dpi.maximum() == MAX_DPI  # what a batch's --dpi accepts, not 2400
    box = VideoOptionsBox()
    qtbot.addWidget(box)
    about = described(VideoOptions)
    assert box.frame_iterations.maximum() == about["frame_iterations"].high
    assert box.temporal_weight.toolTip() == about["temporal_weight"].tooltip


def test_the_windows_choice_boxes_offer_exactly_the_descriptions_choices(qtbot) -> None:
    panel = ControlsPanel(settings_mod.DEFAULTS)
    qtbot.addWidget(panel)
    for name in ("optimizer", "init", "pooling", "style_loss"):
        box = getattr(panel, name)
        about = settings_mod.about(name)
        assert tuple(box.itemData(i) for i in range(box.count())) == about.choices, name
        assert box.toolTip() == about.tooltip, name
