"""No drift: the frames after a fresh one keep its look, and follow their own content."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from style_studio.core import Cancelled, Job, VideoOptions
from style_studio.core import settings as settings_mod
from style_studio.core.jobs import frame_styler
from style_studio.core.jobs.video_job import _render_video as render_video
from style_studio.core.run.cancel import CancelToken
from tests.clips import camera_pan, textured, write_clip

SETTINGS = dataclasses.replace(
    settings_mod.DEFAULTS, size=64, iterations=20, scales=1, first_scale=0, weights="untrained", style_scale=0.5
)


@pytest.fixture
def styled(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[Image.Image], settings_mod.Settings, np.ndarray]]:
    """Each frame's run as made: (its style pictures, its settings, the picture it made)."""
    runs: list[tuple[list[Image.Image], settings_mod.Settings, np.ndarray]] = []
    real = frame_styler._run_picture

    def run_picture(spec, *args, **kwargs):
        result = real(spec, *args, **kwargs)
        if result.image is not None:
            runs.append((list(spec.pictures.styles), spec.settings, np.asarray(result.image)))
        return result

    monkeypatch.setattr(frame_styler, "_run_picture", run_picture)
    return runs


def render(tmp_path: Path, style: Path, pictures: list[np.ndarray], tiny, name: str = "clip", **kwargs) -> None:
    clip = write_clip(tmp_path / f"{name}.mp4", pictures)
    job = Job(name, clip, (style,), SETTINGS, tmp_path / f"{name}-out.mp4", video=VideoOptions(frame_iterations=10))
    render_video(job, tiny, **kwargs)


def test_the_frames_after_the_first_are_styled_towards_its_look_and_the_painting(tmp_path, style, tiny, styled):
    render(tmp_path, style, camera_pan(3, size=(64, 48)), tiny, resume=False)
    painting = Image.open(style).convert("RGB")
    (first_styles, first_settings, first), *later = styled
    assert np.array_equal(np.asarray(first_styles[0]), np.asarray(painting)) and first_settings.style_scale == 0.5
    for styles, settings, _ in later:
        look, *paintings = styles
        # The look's strokes keep their size: at style scale 0.5 its middle half, not the whole frame shrunk.
        assert np.array_equal(np.asarray(look), first[12:36, 16:48])
        assert len(paintings) == 1 and np.array_equal(np.asarray(paintings[0]), np.asarray(painting))
        assert settings.style_scale == 0.5 and settings.style_blend == pytest.approx((0.15, 0.85))


def test_under_a_look_the_style_pictures_keep_their_own_blend():
    settings = dataclasses.replace(SETTINGS, style_blend=(3.0, 1.0))
    assert frame_styler.under_look(settings, 2).style_blend == pytest.approx((0.15, 0.6375, 0.2125))
    assert frame_styler.under_look(SETTINGS, 3).style_blend == pytest.approx((0.15, 0.85 / 3, 0.85 / 3, 0.85 / 3))


def test_a_look_is_mirrored_out_to_a_larger_style_side():
    frame = textured(64, 48, seed=2)
    look = frame_styler.Look(frame)
    larger = np.asarray(look.at_style_side(dataclasses.replace(SETTINGS, style_scale=1.5)))
    assert larger.shape == (72, 96, 3)
    assert np.array_equal(larger[:48, :64], frame)
    assert np.array_equal(larger[48:, :64], frame[::-1][:24])  # mirrored, so no edge runs across it
    assert look.at_style_side(dataclasses.replace(SETTINGS, style_scale=1.0)) is look.picture


def test_a_cut_starts_a_new_look_from_the_painting(tmp_path, style, tiny, styled):
    one, other = textured(64, 48, seed=3), textured(64, 48, seed=11)
    render(tmp_path, style, [one, one, other, other], tiny, resume=False)
    painting = np.asarray(Image.open(style).convert("RGB"))
    firsts = [np.array_equal(np.asarray(styles[0]), painting) for styles, _, _ in styled]
    assert firsts == [True, False, True, False]
    assert np.array_equal(np.asarray(styled[3][0][0]), styled[2][2][12:36, 16:48])  # after the cut: the cut's look


def test_a_resumed_render_keeps_the_look_of_the_frame_kept_first(tmp_path, style, tiny, styled):
    pictures = camera_pan(4, size=(64, 48))
    stop = CancelToken()

    def stop_after_two(record) -> None:
        if record.frame == 3:
            stop.cancel()

    with pytest.raises(Cancelled):
        render(tmp_path, style, pictures, tiny, resume=False, stop=stop, progress=stop_after_two)
    first = styled[0][2]
    styled.clear()
    render(tmp_path, style, pictures, tiny, resume=True)
    assert styled and all(np.array_equal(np.asarray(styles[0]), first[12:36, 16:48]) for styles, _, _ in styled)
