"""Settings as data: defaults in one place, JSON in and out, every problem named, nothing half-applied."""

from __future__ import annotations

import dataclasses
import json

import pytest

from style_studio.core import settings as s
from style_studio.core.errors import SettingsError


def test_defaults_are_the_documented_ones():
    d = s.DEFAULTS
    assert d.content_layers == ("relu4_2",)
    assert [n for n, _ in d.style_layers] == ["relu1_1", "relu2_1", "relu3_1", "relu4_1", "relu5_1"]
    assert (d.optimizer, d.init, d.size, d.device, d.precision, d.weights) == (
        "lbfgs",
        "palette",
        512,
        "auto",
        "auto",
        "imagenet",
    )
    schedule = (d.first_scale, d.scale_ratio, d.iterations, d.finer_iterations)
    assert d.style_loss == "gaussian" and schedule == (192, 2, 150, 0.5)


def test_a_picture_starts_at_half_its_size_or_less_from_384_px():
    """The first scale is between 192 and 383 px: 384 px paints at 192 px first, which closes more of the style
    at the painting's scale in less time than one scale (docs/performance.md)."""
    at = lambda size: dataclasses.replace(s.DEFAULTS, size=size).schedule()  # noqa: E731
    assert at(383) == [(383, 150)]
    assert at(384) == [(192, 150), (384, 75)]
    assert at(512) == [(256, 150), (512, 75)]
    assert at(768) == [(192, 150), (384, 75), (768, 38)]


def test_json_round_trip_keeps_every_field():
    custom = dataclasses.replace(
        s.DEFAULTS,
        size=777,
        optimizer="adam",
        init="noise",
        seed=42,
        style_blend=(2.0, 1.0),
        step_size=0.05,
        preserve_colors=True,
        weights="/tmp/w.pth",
        style_layers=(("conv1_1", 0.25), ("relu5_4", 3.0)),
    )
    assert s.loads(s.dumps(custom)) == custom


def test_malformed_json_is_named():
    with pytest.raises(SettingsError, match=r"^preset\.json: not valid JSON"):
        s.loads("{oops", source="preset.json")


@pytest.mark.parametrize("version", [-5, 0, 1.0, "1", True])
def test_a_version_that_is_no_version_is_refused(version):
    with pytest.raises(SettingsError, match="no valid version"):
        s.loads(json.dumps({"format": "style-studio", "version": version, "settings": {}}))


def test_a_future_version_asks_for_an_update():
    doc = json.dumps({"format": "style-studio", "version": 99, "settings": {}})
    with pytest.raises(SettingsError, match="newer Style Studio .*version 99.*Update"):
        s.loads(doc)


def test_every_problem_is_listed_at_once():
    doc = json.dumps(
        {
            "format": "style-studio",
            "version": 1,
            "settings": {
                "style_layers": {"relu9_9": 1, "relu1_1": -1, "relu2_1": "lots"},
                "content_weight": "heavy",
                "tv_weight": -0.5,
                "size": 10,
                "sparkle": True,
            },
        }
    )
    with pytest.raises(SettingsError) as info:
        s.loads(doc)
    problems = info.value.problems
    assert "unknown setting 'sparkle'" in problems
    assert "unknown style layer 'relu9_9'" in problems
    assert any("relu1_1 weight must be a number from 0 to 1000000" in p for p in problems)
    assert any("relu2_1 weight must be a number from 0 to 1000000, got 'lots'" in p for p in problems)
    assert any(p.startswith("content_weight must be a number") for p in problems)
    assert any(p.startswith("tv_weight must be a number from 0 to 1000000") for p in problems)
    assert any(p.startswith("size must be") for p in problems)


def test_missing_keys_keep_the_base_values():
    assert s.from_dict({"size": 300}) == dataclasses.replace(s.DEFAULTS, size=300)


def test_not_a_settings_document():
    with pytest.raises(SettingsError, match="not a Style Studio settings file"):
        s.loads(json.dumps({"hello": 1}))


def test_booleans_are_not_numbers():
    with pytest.raises(SettingsError, match="content_weight must be a number"):
        s.from_dict({"content_weight": True})


def test_with_style_layer_keeps_network_order():
    changed = s.DEFAULTS.with_style_layer("conv1_1", 2.0).with_style_layer("relu3_1", 0.0)
    names = [n for n, _ in changed.style_layers]
    assert names[0] == "conv1_1" and changed.style_layer_weights["relu3_1"] == 0.0
    assert "relu3_1" not in changed.active_style_layers


def test_blend_weights_normalise():
    assert dataclasses.replace(s.DEFAULTS, style_blend=(3.0, 1.0)).blend_weights(2) == [0.75, 0.25]
    assert s.DEFAULTS.blend_weights(3) == pytest.approx([1 / 3] * 3)


def test_a_first_scale_steps_up_to_the_size_whatever_the_size():
    from style_studio.core.settings import Settings

    def sides(size: int) -> list[int]:
        return [side for side, _ in Settings(size=size, first_scale=128, scale_ratio=1.41).schedule()]

    assert sides(512) == [130, 183, 258, 363, 512]
    assert sides(256)[0] == 129 and sides(256)[-1] == 256 and len(sides(256)) == 3
    assert sides(1024)[0] < 182 and len(sides(1024)) == 7
    assert sides(100) == [100]  # smaller than the first scale: one scale
    # A number of scales set wins over the first scale.
    with_both = Settings(size=512, first_scale=128, scales=3)
    assert with_both.schedule() == Settings(size=512, scales=3, first_scale=0).schedule()


def test_the_default_schedule_starts_at_256_px_and_doubles_with_half_the_iterations():
    from style_studio.core.settings import DEFAULTS

    assert DEFAULTS.schedule() == [(256, 150), (512, 75)]
    assert dataclasses.replace(DEFAULTS, size=200).schedule() == [(200, 150)]  # small: one scale
    assert [side for side, _ in dataclasses.replace(DEFAULTS, size=2048).schedule()] == [256, 512, 1024, 2048]


def test_presets_set_what_they_name_and_keep_the_users_size_weights_and_loss_weights():
    import dataclasses

    from style_studio.core.settings import DEFAULTS, PRESETS, SettingsError, with_preset

    mine = dataclasses.replace(DEFAULTS, size=777, weights="untrained", style_weight=9.0, device="cpu")
    quick = with_preset(mine, "quick")
    assert {k: getattr(quick, k) for k in PRESETS["quick"]} == PRESETS["quick"]
    assert (quick.size, quick.weights, quick.style_weight, quick.device) == (777, "untrained", 9.0, "cpu")
    assert with_preset(with_preset(mine, "quick"), "default") == mine  # back to the defaults it set
    for name in PRESETS:
        with_preset(mine, name).validate()
    with pytest.raises(SettingsError, match="unknown preset"):
        with_preset(mine, "fastest")


def test_what_a_run_takes_live_and_what_reshapes_its_plan_are_said_by_each_setting_s_about():
    """One description per setting: the live fields, the plan's and the job key's exceptions are read from it."""
    from style_studio.core.about import described, keyed_when_set
    from style_studio.core.jobs.job import VideoOptions
    from style_studio.ui.state import shapes_the_plan

    abouts = described(s.Settings)
    assert tuple(name for name, about in abouts.items() if about.live) == s.LIVE_FIELDS
    assert set(s.LIVE_FIELDS) == {"content_weight", "style_weight", "tv_weight", "colour_weight", "style_layers",
                                  "style_blend"}  # fmt: skip
    assert [name for name in abouts if not shapes_the_plan(name)] == ["content_weight", "style_weight", "tv_weight",
                                                                      "colour_weight", "style_blend"]  # fmt: skip
    # Pinned: a job keyed before these settings existed keeps its key.
    assert keyed_when_set(s.Settings) == {"first_scale": 0, "scale_ratio": 2.0, "average": False,
                                                     "style_loss": "gram", "tune_steps": 120,
                                                     "colour_weight": 0.0}  # fmt: skip
    assert keyed_when_set(VideoOptions) == {"frame_settle": 0.0, "frame_repair": 0.0}
