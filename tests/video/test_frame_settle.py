"""A frame that starts close to its end stops early: a still scene costs a few iterations a frame."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from style_studio.core import Job, VideoOptions
from style_studio.core import settings as settings_mod
from style_studio.core.jobs.video_job import _render_video as render_video
from style_studio.core.run.steps import Settle
from tests.clips import textured, write_clip

SETTINGS = dataclasses.replace(settings_mod.DEFAULTS, size=48, iterations=20, scales=1, weights="untrained")


def test_settle_waits_for_its_floor_then_stops_once_the_loss_no_longer_falls():
    settle = Settle(0.01, floor=10, over=5)
    falling = [100.0 * 0.9**n for n in range(12)]  # 10 % an iteration: never settled
    assert not any(settle.settled(loss) for loss in falling)
    flat = falling[-1]
    assert [settle.settled(flat * (1 - 1e-4 * n)) for n in range(6)][-1]  # 5 iterations about flat: settled
    assert not any(Settle(0.0).settled(1.0) for _ in range(50))  # 0: every iteration runs
    assert not any(Settle(0.5).settled(loss) for loss in [1.0] * 10)  # nothing before the floor
    assert not Settle(0.5, floor=1, over=1).settled(float("inf"))


def iterations_per_frame(tmp_path: Path, style: Path, settle: float, tiny) -> dict[int, int]:
    still = [textured(64, 48, seed=3)] * 3
    clip = write_clip(tmp_path / f"still-{settle}.mp4", still)
    options = VideoOptions(frame_iterations=40, frame_settle=settle)
    job = Job("still", clip, (style,), SETTINGS, tmp_path / f"out-{settle}.mp4", video=options)
    ran: dict[int, int] = {}

    def record(frame) -> None:
        if frame.progress is not None and not frame.progress.within_iteration:
            ran[frame.frame] = max(ran.get(frame.frame, 0), frame.progress.iteration)

    render_video(job, tiny, progress=record, resume=False)
    return ran


@pytest.mark.slow
def test_the_frames_of_a_still_scene_stop_early_and_without_it_run_all_their_iterations(tmp_path, style, tiny):
    every = iterations_per_frame(tmp_path, style, 0.0, tiny)
    assert [every[n] for n in (2, 3)] == [40, 40]
    settled = iterations_per_frame(tmp_path, style, 0.15, tiny)  # the tiny network falls 5-18 % in 10
    assert settled[1] == 20  # the first frame runs its own iterations
    assert all(10 <= settled[n] < 40 for n in (2, 3)), settled


def test_a_video_made_before_frames_could_stop_early_keeps_its_key_and_its_kept_frames():
    from PIL import Image

    from style_studio.core.jobs.job import video_key
    from tests.former import FORMER_DEFAULTS, FORMER_VIDEO_FIELDS

    settings = dataclasses.replace(FORMER_DEFAULTS, weights="untrained")  # the key was pinned before they changed
    styles = [Image.new("RGB", (8, 8), "blue")]

    def key(options: VideoOptions) -> str:
        job = Job("v", Path("clip.mp4"), (Path("style.png"),), settings, Path("out.mp4"), video=options)
        return video_key(job, "0" * 64, styles)

    former = VideoOptions(**FORMER_VIDEO_FIELDS)
    assert key(former) == "4d3d89526417375193a81a87e1aff4ad"  # the key before the option existed
    assert key(dataclasses.replace(former, frame_settle=0.01)) != key(former)
