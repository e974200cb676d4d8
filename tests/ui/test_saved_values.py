"""A value the core accepts is one every control can show, and whatever the saved settings hold, the window
opens: one value that broke a slider, once saved, stopped the window from ever opening again."""

from __future__ import annotations

import dataclasses
import json

import pytest

from style_studio.core import VideoOptions
from style_studio.core import settings as settings_mod
from style_studio.core.settings import MAX_WEIGHT
from style_studio.ui import store as store_mod
from style_studio.ui.run_bar import duration
from tests.ui.conftest import FAST


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_weight_at_the_top_of_its_range_puts_the_slider_at_its_end_and_the_number_whole(qtbot, window, tmp_path):
    """1e9 once raised OverflowError in a layer's slider; now the range stops at MAX_WEIGHT, and every value within
    it shows: the slider at its end, the number as it is, and the setting unchanged by being shown."""
    top = dataclasses.replace(FAST, style_weight=MAX_WEIGHT, tv_weight=MAX_WEIGHT).with_style_layer(
        "relu1_1", MAX_WEIGHT
    )
    preset = tmp_path / "top.json"
    preset.write_text(settings_mod.dumps(top))
    assert window.files.load_preset(preset), window.banner.text()
    controls = window.controls
    layer = controls.layer_sliders["relu1_1"]
    assert layer.slider.value() == layer.slider.maximum() and layer.value() == MAX_WEIGHT
    assert "1e+06" in layer.number.text()
    style = controls.widget("style_weight")
    assert style.slider.value() == style.slider.maximum() and style.spin.value() == MAX_WEIGHT
    assert window.state.settings.style_layer_weights["relu1_1"] == MAX_WEIGHT
    assert window.state.settings.style_weight == MAX_WEIGHT and controls.settings() == window.state.settings


def test_a_weight_out_of_range_is_refused_where_it_enters_with_one_line(window, tmp_path):
    preset = tmp_path / "huge.json"
    document = json.loads(settings_mod.dumps(FAST))
    document["settings"]["style_layers"]["relu1_1"] = 1e9
    preset.write_text(json.dumps(document))
    before = window.state.settings
    assert not window.files.load_preset(preset)
    assert "relu1_1 weight must be a number from 0 to 1000000, got 1000000000.0" in window.banner.text()
    assert window.state.settings == before


@pytest.mark.parametrize(
    ("key", "saved"),
    [
        (store_mod._SETTINGS, json.dumps({"format": "style-studio", "version": 1,
                                          "settings": {"size": 320, "style_layers": {"relu1_1": 1e9}}})),
        (store_mod._SETTINGS, '{"format": "style-studio", "version": 1, "settings": {"size": 320, "tv_weight": '
                              + nested(50_000) + "}}"),
        (store_mod._SETTINGS, nested(50_000)),
        (store_mod._SETTINGS, json.dumps({"format": "style-studio", "version": 1,
                                          "settings": {"size": 320, "k" * 2_000_000: 1}})),
        (store_mod._VIDEO_OPTIONS, '{"frame_iterations": 7, "temporal_weight": ' + nested(50_000) + "}"),
        (store_mod._VIDEO_OPTIONS, nested(50_000)),
        (store_mod._SETTINGS, json.dumps({"format": "style-studio", "version": 1,
                                          "settings": {"size": 320, "average": "yes", "device": "cuda:00"}})),
        (store_mod._SPEED, "inf"),
        (store_mod._SPEED, "1e308"),
        (store_mod._SPEED, "nan"),
    ],
    ids=["a layer weight of 1e9", "a value nested 50,000 deep", "a document nested 50,000 deep", "a 2 MB key",
         "a true/false setting that is neither, a device torch cannot read",
         "a video option nested 50,000 deep", "video options nested 50,000 deep", "an infinite speed",
         "a speed of 1e308", "a speed that is not a number"],
)  # fmt: skip
def test_the_window_opens_whatever_the_saved_settings_hold_and_keeps_what_is_valid(make_window, store, key, saved):
    store.qs.setValue(key, saved)
    store.qs.setValue(store_mod._SPEED_COMPUTE, "cpu, fp32")
    window = make_window(settings=None)  # the window's own start: its saved settings
    window.controls.set_settings(dataclasses.replace(window.state.settings, weights="untrained"))
    window.show()
    assert window.isVisible()
    if key == store_mod._SETTINGS and saved.startswith("{"):
        assert window.state.settings.size == 320  # salvaged field by field
        assert window.state.settings.style_layers == settings_mod.DEFAULTS.style_layers
        assert (window.state.settings.average, window.state.settings.device) == (False, "auto")
    if key == store_mod._VIDEO_OPTIONS and saved.startswith("{"):
        assert window.state.video.frame_iterations == 7
    if key == store_mod._SPEED:
        assert store.speed() is None


def test_a_duration_that_is_no_number_of_seconds_is_said_as_nothing_and_a_huge_one_in_short():
    assert [duration(s) for s in (float("inf"), float("nan"), 1e308, 65.0)] == ["", "", "over 100 days", "1 min 05 s"]


def test_video_options_keep_each_valid_value_of_a_damaged_save(store):
    store.qs.setValue(store_mod._VIDEO_OPTIONS, json.dumps({"frame_iterations": 9, "temporal_weight": "x"}))
    assert store.video_options() == dataclasses.replace(VideoOptions(), frame_iterations=9)
