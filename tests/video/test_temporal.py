"""Flow, reliability, warping and the temporal term, on clips whose motion is known."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from style_studio.core.objective.temporal import (
    FlowEstimator,
    FrameGuide,
    FrameMotion,
    TemporalTarget,
    warp,
    warping_error,
)
from tests.clips import camera_pan, moving_object, textured


@pytest.fixture(scope="module")
def flows() -> FlowEstimator:
    return FlowEstimator("dis")


def test_the_backward_flow_of_a_pan_is_the_cameras_step(flows: FlowEstimator) -> None:
    """The camera moves 2 px right and 1 px down a frame: a pixel of frame t was 2 px right, 1 px down in t-1."""
    previous, current = camera_pan(6, size=(128, 96))[3:5]
    motion = FrameMotion.between(previous, current, flows)
    inside = motion.backward[16:-16, 16:-16].reshape(-1, 2)
    assert np.median(inside[:, 0]) == pytest.approx(2.0, abs=0.25)
    assert np.median(inside[:, 1]) == pytest.approx(1.0, abs=0.25)
    assert motion.reliable_share > 0.8 and not motion.is_cut
    seen = warp(previous, motion.backward).astype(float)
    error = np.abs(seen - current)[motion.reliable > 0].mean()
    assert error < 4  # out of 255: frame t-1 carried along the flow is frame t


def test_pixels_uncovered_behind_a_moving_object_are_not_trusted(flows: FlowEstimator) -> None:
    pictures = moving_object(8, size=(128, 96))
    motion = FrameMotion.between(pictures[3], pictures[4], flows)
    background = np.ones(motion.reliable.shape, bool)
    background[20:76, :] = False  # the object's band
    assert motion.reliable[background].mean() > 0.9
    # Where frame t shows background that frame t-1 hid, little is trusted.
    side = 48
    left_before = int(4 + 3 * (128 - side - 8) / 7)
    left_now = int(4 + 4 * (128 - side - 8) / 7)
    revealed = motion.reliable[24 + 4 : 24 + side - 4, left_before + 1 : left_now - 1]
    assert revealed.size and revealed.mean() < 0.5


def test_a_cut_to_another_scene_is_seen(flows: FlowEstimator) -> None:
    one, other = textured(128, 96, seed=3), textured(128, 96, seed=11)
    assert FrameMotion.between(one, other, flows).is_cut
    assert not FrameMotion.between(one, one, flows).is_cut


def test_a_frame_starts_from_the_previous_stylised_frame_carried_along(flows: FlowEstimator) -> None:
    previous, current = camera_pan(6, size=(128, 96))[3:5]
    motion = FrameMotion.between(previous, current, flows)
    stylised = textured(128, 96, seed=5)
    start = motion.carried(stylised, current)
    trusted = motion.reliable > 0
    assert np.abs(start[trusted].astype(int) - warp(stylised, motion.backward)[trusted]).max() <= 1


def tinted(picture: np.ndarray) -> np.ndarray:
    """A stand-in for a style: each channel mapped on its own (darker red, bluer, lifted green)."""
    gain, offset = np.array([0.5, 0.8, 0.6]), np.array([10.0, 40.0, 90.0])
    return (picture * gain + offset).round().clip(0, 255).astype(np.uint8)


def test_pixels_uncovered_behind_an_object_start_in_their_neighbours_styled_colours(flows: FlowEstimator) -> None:
    """No trail: what the object uncovers starts as styled as what was never covered, not as the photo."""
    previous, current = moving_object(8, size=(128, 96))[3:5]
    motion = FrameMotion.between(previous, current, flows)
    start = motion.carried(tinted(previous), current).astype(float)
    untrusted = motion.reliable == 0
    assert untrusted.sum() > 100
    wanted = tinted(current).astype(float)
    off = np.abs(start - wanted)[untrusted].mean()
    as_photo = np.abs(current.astype(float) - wanted)[untrusted].mean()
    assert off < 6 and off < as_photo / 5


def test_the_styled_estimate_takes_the_whole_pictures_colours_where_nothing_near_is_known() -> None:
    from style_studio.core.objective.temporal import styled_estimate

    content = textured(128, 96, seed=4)
    known = np.zeros((96, 128), np.float32)
    known[:, :24] = 1  # only a strip at the left is styled; the right half is far from it
    estimate = styled_estimate(tinted(content), content, known)
    assert np.abs(estimate[:, 96:] - tinted(content)[:, 96:]).mean() < 4


def test_the_temporal_term_is_zero_at_the_warped_frame_and_about_its_weight_for_another() -> None:
    warped = textured(64, 48, seed=2)
    reliable = np.ones((48, 64), np.float32)
    target = TemporalTarget.prepare(warped, reliable, 5.0, (64, 48), torch.device("cpu"), luminance=False)
    same = torch.from_numpy(warped).permute(2, 0, 1)[None].float() / 255
    other = torch.from_numpy(textured(64, 48, seed=9)).permute(2, 0, 1)[None].float() / 255
    assert float(target.term(same)) == pytest.approx(0.0, abs=1e-6)
    assert 2.0 < float(target.term(other)) < 10.0
    nowhere = TemporalTarget.prepare(warped, reliable * 0, 5.0, (64, 48), torch.device("cpu"), luminance=False)
    assert float(nowhere.term(other)) == 0.0


def test_a_guide_with_no_weight_only_sets_the_start() -> None:
    picture = textured(64, 48)
    guide = FrameGuide(picture, picture, np.ones((48, 64), np.float32), 0.0)
    assert guide.target((64, 48), torch.device("cpu"), luminance=False) is None
    start = guide.start_tensor((32, 24), torch.device("cpu"), luminance=True)
    assert start.shape == (1, 1, 24, 32)


def test_the_warping_error_is_zero_for_a_still_picture_and_grows_with_flicker(flows: FlowEstimator) -> None:
    still = textured(64, 48)
    motion = FrameMotion.between(still, still, flows)
    assert warping_error(still, still, motion) == pytest.approx(0.0, abs=1e-6)
    noisy = np.clip(still.astype(int) + np.random.default_rng(0).integers(-30, 30, still.shape), 0, 255)
    assert warping_error(noisy.astype(np.uint8), still, motion) > 0.003


@pytest.mark.parametrize("schedule", [{"scales": 3}, {"first_scale": 128, "scale_ratio": 1.41}])
def test_a_frame_after_the_first_runs_at_full_size_whatever_the_pictures_schedule(schedule):
    import dataclasses

    from style_studio.core.jobs.frame_styler import frame_settings
    from style_studio.core.jobs.job import VideoOptions
    from style_studio.core.settings import DEFAULTS

    settings = dataclasses.replace(DEFAULTS, size=512, **schedule)
    assert len(settings.schedule()) > 1  # the first frame's
    assert frame_settings(settings, VideoOptions(frame_iterations=40), 1).schedule() == [(512, 40)]
