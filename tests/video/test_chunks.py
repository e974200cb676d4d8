"""A long clip in chunks: the key frame first, each chunk under its look, overlaps faded, kept chunks resumed."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from style_studio.cli import main
from style_studio.core import (
    Cancelled,
    CancelToken,
    ChunkFrames,
    ChunksInProcess,
    Job,
    StyleStudioError,
    VideoOptions,
    plan_chunks,
)
from style_studio.core import settings as settings_mod
from style_studio.core.io.files import cache_folder
from style_studio.core.jobs import frame_styler
from style_studio.core.jobs.video_chunks import Chunk, KeptFramesError, faded, joined
from style_studio.core.jobs.video_chunks import _render_video_in_chunks as render_video_in_chunks
from style_studio.core.jobs.video_job import _render_video as render_video
from tests.clips import camera_pan, write_clip

SETTINGS = dataclasses.replace(settings_mod.DEFAULTS, size=48, iterations=8, scales=1, first_scale=0,
                               weights="untrained")  # fmt: skip
OPTIONS = VideoOptions(frame_iterations=4)
QUICK = [
    "--size",
    "48",
    "--iterations",
    "8",
    "--scales",
    "1",
    "--first-scale",
    "0",
    "--frame-iterations",
    "4",
    "--weights",
    "untrained",
    "--progress",
    "none",
]  # fmt: skip (the command line's SETTINGS and OPTIONS)


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def lossless_clip(tmp_path: Path, frames: int) -> Path:
    return write_clip(tmp_path / "pan.mkv", camera_pan(frames, size=(48, 32)), codec="ffv1", pix_fmt="bgr0")


def job_for(clip: Path, style: Path, output: Path) -> Job:
    return Job("1", clip, (style,), SETTINGS, output, video=OPTIONS)


def folder_frames(folder: Path) -> list[np.ndarray]:
    return [np.asarray(Image.open(p).convert("RGB")) for p in sorted(folder.glob("*.png"))]


def frames_styled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one for each frame styled from now on in this process."""
    styled: list[int] = []
    real = frame_styler._run_picture

    def run_picture(*args, **kwargs):
        styled.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(frame_styler, "_run_picture", run_picture)
    return styled


def test_chunks_cover_the_clip_each_starting_its_overlap_before_its_own_frames():
    assert plan_chunks(100, 48, 6) == [Chunk(0, 1, 1, 49), Chunk(1, 43, 49, 97), Chunk(2, 91, 97, None)]
    assert plan_chunks(10, 48, 6) == [Chunk(0, 1, 1, None)]  # a short clip: one chunk, read to its end
    assert plan_chunks(0, 48, 6) == [Chunk(0, 1, 1, None)]  # headers that say nothing: one chunk
    with pytest.raises(StyleStudioError, match="more frames than it overlaps"):
        plan_chunks(100, 6, 6)


def test_the_overlap_fades_from_one_chunks_pictures_to_the_next_ones():
    def flat(chunk: Chunk, count: int, value: int) -> ChunkFrames:
        pictures = tuple(np.full((2, 2, 3), value, np.uint8) for _ in range(count))
        return ChunkFrames(chunk, pictures, tuple(0.1 * (chunk.start + i - 1) for i in range(count)), "cpu", 0)

    first, second = Chunk(0, 1, 1, 11), Chunk(1, 7, 11, None)
    frames = list(joined([flat(first, 10, 0), flat(second, 8, 250)], overlap=4))
    assert [round(when, 1) for when, _ in frames] == [round(0.1 * i, 1) for i in range(14)]  # in order, once each
    assert [int(p[0, 0, 0]) for _, p in frames] == [0] * 6 + [50, 100, 150, 200] + [250] * 4


def test_a_fade_between_two_stroke_patterns_keeps_their_contrast_and_their_colours():
    rng = np.random.default_rng(0)
    colour = np.array([120, 90, 60], np.float32)
    before, after = (np.clip(colour + rng.normal(0, 30, (96, 96, 3)), 0, 255).astype(np.uint8) for _ in range(2))
    halfway = faded(before, after, 0.5).astype(np.float32)
    plain = (before.astype(np.float32) + after) / 2

    def contrast(picture: np.ndarray) -> float:
        return float(picture.std((0, 1)).mean())

    assert contrast(plain) < 0.75 * contrast(before)  # what a plain mix of unrelated strokes does
    assert contrast(halfway) == pytest.approx(contrast(before), rel=0.05)
    np.testing.assert_allclose(halfway.mean((0, 1)), colour, atol=1.5)
    # A picture faded into itself is itself, whatever the share.
    np.testing.assert_array_equal(faded(before, before, 0.3), before)


def test_the_first_chunks_frames_are_the_frames_a_whole_render_makes(tmp_path, style, tiny, monkeypatch):
    clip = lossless_clip(tmp_path, 9)
    render_video(job_for(clip, style, tmp_path / "whole"), tiny)
    runs: list[tuple[list[Image.Image], np.ndarray]] = []  # each frame's style pictures, and what it made
    real = frame_styler._run_picture

    def run_picture(spec, *args, **kwargs):
        result = real(spec, *args, **kwargs)
        runs.append((list(spec.pictures.styles), np.asarray(result.image)))
        return result

    monkeypatch.setattr(frame_styler, "_run_picture", run_picture)
    made: list[str] = []
    runner = ChunksInProcess(tiny)
    rendered = render_video_in_chunks(
        job_for(clip, style, tmp_path / "chunks"),
        runner,
        chunk_frames=4,
        overlap=2,
        progress=lambda done: made.extend([done.chunk.chunk.name] if done.chunk else []),
    )
    whole, chunked = folder_frames(tmp_path / "whole"), folder_frames(tmp_path / "chunks")
    assert rendered.frames == 9 and len(chunked) == 9
    assert made == ["key", "chunk-00000", "chunk-00001", "chunk-00002"]  # the key frame first, alone
    for number in (1, 2):  # chunk 0 alone, before the next one fades in over frames 3 and 4
        assert np.array_equal(whole[number - 1], chunked[number - 1]), number
    assert not np.array_equal(whole[8], chunked[8])  # the last chunk began fresh: its own strokes
    # ... under the key frame's look: every frame after the key frame, a chunk's first too, is styled towards it
    # (and the painting).
    key_frame, painting = runs[0][1], np.asarray(runs[0][0][0])
    assert len(runs) == 1 + 3 + 6 + 3
    for styles, _ in runs[1:]:
        assert [np.asarray(s).shape for s in styles] == [key_frame.shape, painting.shape]
        assert np.array_equal(np.asarray(styles[0]), key_frame) and np.array_equal(np.asarray(styles[1]), painting)
    assert not list((cache_folder() / "videos").glob("*-chunks/*"))  # the kept chunks are gone once written


def test_the_progress_counts_each_frame_a_chunk_under_way_styles_once_and_in_order(tmp_path, style, tiny):
    clip = lossless_clip(tmp_path, 9)
    totals: list[int] = []
    render_video_in_chunks(job_for(clip, style, tmp_path / "out"), ChunksInProcess(tiny), chunk_frames=4, overlap=2,
                           progress=lambda done: totals.append(done.frames + done.styling))  # fmt: skip
    assert totals == sorted(totals) and set(totals) == set(range(10))  # frame by frame, not chunk by chunk
    assert totals.count(4) == 2  # chunk 0's last frame styled, then kept; the next chunk's overlap is not counted


def test_a_stopped_chunked_render_keeps_its_chunks_and_goes_on_from_them(tmp_path, style, tiny):
    clip = lossless_clip(tmp_path, 8)
    job = job_for(clip, style, tmp_path / "out")
    stop = CancelToken()

    def stop_after_the_first_chunk(done) -> None:
        if done.chunks == 2:
            stop.cancel()

    with pytest.raises(Cancelled):
        render_video_in_chunks(job, ChunksInProcess(tiny), chunk_frames=4, overlap=1, stop=stop,
                               progress=stop_after_the_first_chunk)  # fmt: skip
    assert not (tmp_path / "out").exists()
    with pytest.raises(KeptFramesError, match="2 chunk"):
        render_video_in_chunks(job, ChunksInProcess(tiny), chunk_frames=4, overlap=1, resume=None)
    styled: list[str] = []

    class Counting(ChunksInProcess):
        def run(self, works, style, cancel, told=None):
            styled.extend(work.chunk.name for work in works)
            yield from super().run(works, style, cancel, told)

    rendered = render_video_in_chunks(job, Counting(tiny), chunk_frames=4, overlap=1, resume=True)
    assert styled == ["chunk-00001"] and rendered.frames == 8 and len(folder_frames(tmp_path / "out")) == 8


def test_a_chunk_stopped_half_way_goes_on_from_its_last_kept_frame_to_the_same_video(tmp_path, style, tiny,
                                                                                     monkeypatch):  # fmt: skip
    clip = lossless_clip(tmp_path, 8)
    render_video_in_chunks(job_for(clip, style, tmp_path / "whole"), ChunksInProcess(tiny), chunk_frames=4, overlap=1)
    job = job_for(clip, style, tmp_path / "out")
    stop = CancelToken()

    def stop_in_the_second_chunk(done) -> None:
        if done.chunks == 2 and done.styling == 2:  # chunk 0 kept; chunk 1 styled frames 4 (overlap), 5 and 6
            stop.cancel()

    with pytest.raises(Cancelled):
        render_video_in_chunks(job, ChunksInProcess(tiny), chunk_frames=4, overlap=1, stop=stop,
                               progress=stop_in_the_second_chunk)  # fmt: skip
    with pytest.raises(KeptFramesError, match="3 chunk"):  # the key frame, chunk 0, and part of chunk 1
        render_video_in_chunks(job, ChunksInProcess(tiny), chunk_frames=4, overlap=1, resume=None)
    styled = frames_styled(monkeypatch)
    totals: list[int] = []
    render_video_in_chunks(job, ChunksInProcess(tiny), chunk_frames=4, overlap=1, resume=True,
                           progress=lambda done: totals.append(done.frames + done.styling))  # fmt: skip
    assert len(styled) == 2  # frames 7 and 8: not the chunk again from frame 4
    assert totals[0] == 4 + 2  # the kept frames (chunk 0's and 2 of chunk 1's) counted before any is styled
    for number, (a, b) in enumerate(zip(folder_frames(tmp_path / "whole"), folder_frames(tmp_path / "out"),
                                        strict=True), start=1):  # fmt: skip
        assert np.array_equal(a, b), number  # as if it had never stopped
    assert not list((cache_folder() / "videos").glob("*-chunks/*"))


@pytest.mark.parametrize("damage", ["cut", "empty", "flipped"])
def test_a_damaged_kept_chunk_is_set_aside_and_styled_again(tmp_path, style, tiny, monkeypatch, damage):
    clip = lossless_clip(tmp_path, 8)
    render_video_in_chunks(job_for(clip, style, tmp_path / "whole"), ChunksInProcess(tiny), chunk_frames=4, overlap=1)
    job = job_for(clip, style, tmp_path / "out")
    stop = CancelToken()

    def stop_after_chunk_0(done) -> None:
        if done.chunks == 2:  # the key frame and chunk 0 kept
            stop.cancel()

    with pytest.raises(Cancelled):
        render_video_in_chunks(job, ChunksInProcess(tiny), chunk_frames=4, overlap=1, stop=stop,
                               progress=stop_after_chunk_0)  # fmt: skip
    (kept,) = (cache_folder() / "videos").glob("*-chunks/chunk-00000-*.npz")
    data = kept.read_bytes()
    at = len(data) // 3  # in the pictures' compressed bytes
    data = {"cut": data[:at], "empty": b"", "flipped": data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]}[damage]
    kept.write_bytes(data)
    said: list[str] = []
    styled = frames_styled(monkeypatch)
    rendered = render_video_in_chunks(job, ChunksInProcess(tiny), chunk_frames=4, overlap=1, resume=True,
                                      say=said.append)  # fmt: skip
    assert rendered.frames == 8 and len(styled) >= 4  # chunk 0 again (its frames but the key frame), and chunk 1
    (moved,) = (cache_folder() / "videos.unreadable").glob("*chunk-00000-*.npz.unreadable-*")
    assert moved.read_bytes() == data and len(said) == 1 and str(moved) in said[0] and "styled again" in said[0]
    for a, b in zip(folder_frames(tmp_path / "whole"), folder_frames(tmp_path / "out"), strict=True):
        assert np.array_equal(a, b)


def test_a_chunk_that_fails_says_which_and_keeps_the_others(tmp_path, style, tiny):
    clip = lossless_clip(tmp_path, 8)
    job = job_for(clip, style, tmp_path / "out.mp4")

    class FailingSecond(ChunksInProcess):
        def run(self, works, style, cancel, told=None):
            for work in works:
                if work.chunk.index == 1:
                    raise StyleStudioError("chunk-00001 of pan.mkv: out of memory")
                yield from super().run([work], style, cancel, told)

    with pytest.raises(StyleStudioError, match="chunk-00001"):
        render_video_in_chunks(job, FailingSecond(tiny), chunk_frames=4, overlap=1)
    kept = sorted(p.name.split("-")[0] for p in (cache_folder() / "videos").glob("*-chunks/*.npz"))
    assert kept == ["chunk", "key"] and not (tmp_path / "out.mp4").exists()


def test_chunk_options_without_ray_are_refused_with_what_they_need(tmp_path, style, tiny_network):
    clip = lossless_clip(tmp_path, 4)
    code, _, err = run("video", clip, style, "-o", tmp_path / "out.mp4", *QUICK, "--chunk-frames", "2")
    assert code == 2 and "add --ray" in err, err
    code, _, err = run("video", clip, style, "-o", tmp_path / "out.mp4", *QUICK, "--ray", "auto", "--chunk-frames",
                       "2", "--chunk-overlap", "2")  # fmt: skip
    assert code != 0 and "more frames than it overlaps" in err, err


@pytest.mark.slow
@pytest.mark.timeout(900)  # a Ray worker starts in seconds on a quiet machine, in a minute on a busy one
def test_a_clip_in_chunks_on_ray_is_the_clip_this_process_makes_in_chunks(tmp_path, style, tiny, tiny_network,
                                                                          ray_address):  # fmt: skip
    clip = lossless_clip(tmp_path, 7)
    render_video_in_chunks(job_for(clip, style, tmp_path / "here"), ChunksInProcess(tiny), chunk_frames=3, overlap=1)
    code, out, err = run("video", clip, style, "-o", tmp_path / "ray", *QUICK, "--ray", ray_address,
                         "--chunk-frames", "3", "--chunk-overlap", "1", "--progress", "json")  # fmt: skip
    assert code == 0, err
    reports = [json.loads(line) for line in out.splitlines() if "chunks_done" in line]
    assert any(r["frames_styling"] > 0 for r in reports), reports  # the frames of chunks under way, from the tasks
    assert reports[-1]["frames_done"] == 7 and reports[-1]["frames_styling"] == 0
    assert all(r["frames_done"] + r["frames_styling"] <= 7 for r in reports), reports
    assert f"on Ray at {ray_address}: 1 node(s), 2 CPUs" in err, err
    here, there = folder_frames(tmp_path / "here"), folder_frames(tmp_path / "ray")
    assert len(here) == len(there) == 7
    for number, (a, b) in enumerate(zip(here, there, strict=True), start=1):
        # The same picture up to rounding: a worker computes with as many threads as its task has CPUs, this
        # process with all, and sums in another order (a few values of a frame or two move by up to 4 levels).
        off = np.abs(a.astype(int) - b.astype(int))
        assert off.max() <= 8 and np.mean(off > 2) < 0.01, (number, off.max(), np.mean(off > 2))


@pytest.mark.slow
def test_a_chunk_ray_runs_again_after_its_worker_died_goes_on_from_the_frames_it_handed_over(
    tmp_path, style, tiny, tiny_network, ray_address, monkeypatch
):
    import ray
    import torch

    from style_studio.cli.ray_cluster import RayCluster
    from style_studio.cli.ray_video import StyledFrames, _ray_chunk
    from style_studio.core import ChunkWork
    from style_studio.core.jobs.video_chunks import KEY_FRAME
    from style_studio.core.jobs.video_chunks import _render_chunk as render_chunk

    clip = lossless_clip(tmp_path, 8)
    job = job_for(clip, style, tmp_path / "out")
    styles = (Image.open(style).convert("RGB"),)
    key = render_chunk(ChunkWork(job, KEY_FRAME, styles, None), tiny).pictures[0]
    work = ChunkWork(job, plan_chunks(8, 4, 1)[1], styles, key)  # frames 4 (the overlap) to 8
    whole = render_chunk(work, tiny)
    cluster = RayCluster(ray_address)
    cluster.connect()
    try:
        inbox = ray.remote(num_cpus=0)(StyledFrames).remote()
        for number, picture in zip((4, 5, 6), whole.pictures, strict=False):  # handed over before the worker died
            ray.get(inbox.tell.remote(1, number, picture))
        styled = frames_styled(monkeypatch)
        again = _ray_chunk(work, render_chunk, clip.read_bytes(), None, "untrained", torch.get_num_threads(), inbox)
    finally:
        cluster.close()
    assert len(styled) == 2  # frames 7 and 8
    assert len(again.pictures) == 5
    for a, b in zip(whole.pictures, again.pictures, strict=True):
        assert np.array_equal(a, b)
