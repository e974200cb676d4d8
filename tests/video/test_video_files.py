"""Video files in and out: frames, times, rotation, colour and sound survive; bad files get a clear error."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from style_studio.core.io import video, video_writer
from style_studio.core.io.video import VideoError
from tests.clips import camera_pan, sound_only, streams_of, write_clip


def _frames(path: Path) -> list[video.ClipFrame]:
    return list(video.read_frames(path))


def _audio_packets(path: Path) -> list[bytes]:
    with av.open(str(path)) as container:
        return [bytes(p) for p in container.demux(container.streams.audio[0]) if p.size]


def test_round_trip_keeps_frames_times_and_the_sound_packet_for_packet(tmp_path: Path) -> None:
    pictures = camera_pan(24)
    clip = write_clip(tmp_path / "pan.mp4", pictures, sound="aac")
    info = video.probe(clip)
    assert (info.width, info.height, info.frame_count, info.sound) == (96, 64, 24, "aac")
    frames = _frames(clip)
    assert len(frames) == 24
    assert np.abs(frames[5].picture.astype(int) - pictures[5]).mean() < 6  # H.264 at 4:2:0
    notes = video_writer.write_video(tmp_path / "out.mp4", ((f.time, f.picture) for f in frames), info.frame_rate, info)
    assert notes == []
    assert streams_of(tmp_path / "out.mp4") == {"video": "h264", "audio": "aac"}
    assert _audio_packets(tmp_path / "out.mp4") == _audio_packets(clip)
    again = _frames(tmp_path / "out.mp4")
    assert [round(f.time, 3) for f in again] == [round(f.time, 3) for f in frames]
    with av.open(str(tmp_path / "out.mp4")) as container:
        assert container.streams.video[0].codec_context.pix_fmt == "yuv420p"


def test_a_variable_frame_rate_keeps_each_frames_time(tmp_path: Path) -> None:
    times = [0, 0.1, 0.15, 0.3, 0.35, 0.6, 0.7, 0.75, 0.9, 1.2]
    clip = write_clip(tmp_path / "vfr.mp4", camera_pan(10), times=times)
    frames = _frames(clip)
    assert [round(f.time, 3) for f in frames] == times
    video_writer.write_video(tmp_path / "out.mp4", ((f.time, f.picture) for f in frames), 10, None)
    assert [round(f.time, 3) for f in _frames(tmp_path / "out.mp4")] == times


def test_rotation_metadata_turns_the_frames_upright(tmp_path: Path) -> None:
    pictures = camera_pan(3)
    clip = write_clip(tmp_path / "phone.mp4", pictures, rotate=90)
    info = video.probe(clip)
    assert (info.rotation, info.width, info.height) == (90, 64, 96)
    first = _frames(clip)[0].picture
    assert first.shape == (96, 64, 3)
    assert np.abs(first.astype(int) - np.rot90(pictures[0], 1)).mean() < 6


@pytest.mark.parametrize(("colorspace", "matrix"), [(1, "itu709"), (5, "itu601")])
def test_colour_is_converted_with_the_matrix_the_file_declares(tmp_path: Path, colorspace: int, matrix: str) -> None:
    """A saturated orange stays orange whether the file says BT.709 or BT.601 (the wrong matrix shifts it by ~20)."""
    orange = np.zeros((64, 64, 3), np.uint8)
    orange[:] = (230, 120, 20)
    path = tmp_path / f"orange-{matrix}.mp4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=10)
        stream.width = stream.height = 64
        stream.pix_fmt = "yuv420p"
        stream.codec_context.colorspace = colorspace
        stream.codec_context.color_range = 1
        for index in range(3):
            frame = av.VideoFrame.from_ndarray(orange, format="rgb24")
            frame = frame.reformat(format="yuv420p", dst_colorspace=matrix, dst_color_range="MPEG")
            frame.pts, frame.time_base = index, Fraction(1, 10)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    decoded = _frames(path)[0].picture[8:56, 8:56].reshape(-1, 3).mean(0)
    assert np.abs(decoded - orange[0, 0]).max() < 6


def test_outputs_take_sound_where_they_can(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(12), sound="aac")
    info = video.probe(clip)
    frames = [(f.time, f.picture) for f in _frames(clip)]
    webm_notes = video_writer.write_video(tmp_path / "out.webm", frames, info.frame_rate, info)
    assert streams_of(tmp_path / "out.webm") == {"video": "vp9", "audio": "opus"}
    assert webm_notes == ["the sound (aac) is re-encoded as libopus"]
    gif_notes = video_writer.write_video(tmp_path / "out.gif", frames, info.frame_rate, info)
    assert streams_of(tmp_path / "out.gif") == {"video": "gif"}
    assert gif_notes == ["the sound is left out: GIF files have none"]
    video_writer.write_video(tmp_path / "out.mov", frames, info.frame_rate, info)
    assert _audio_packets(tmp_path / "out.mov") == _audio_packets(clip)
    video_writer.write_video(tmp_path / "frames", frames, info.frame_rate, info)
    assert sorted(p.name for p in (tmp_path / "frames").iterdir())[:2] == ["frame-000001.png", "frame-000002.png"]
    assert len(list((tmp_path / "frames").iterdir())) == 12


def test_a_part_of_the_clip_keeps_its_part_of_the_sound(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(24), sound="aac")
    info = video.probe(clip)
    part = list(video.read_frames(clip, 0.5, 1.0))
    assert len(part) == 12 and part[0].time == pytest.approx(0.0, abs=0.01)
    video_writer.write_video(
        tmp_path / "part.mp4", ((f.time, f.picture) for f in part), info.frame_rate, info, 0.5, 1.0
    )
    written = video.probe(tmp_path / "part.mp4")
    assert written.frame_count == 12 and written.sound == "aac"
    with av.open(str(tmp_path / "part.mp4")) as container:
        audio = container.streams.audio[0]
        assert float(audio.duration * audio.time_base) == pytest.approx(1.0, abs=0.05)


def test_a_failed_write_leaves_nothing_and_an_existing_file_untouched(tmp_path: Path) -> None:
    target = tmp_path / "out.mp4"
    target.write_bytes(b"the user's earlier video")

    def frames():
        yield 0.0, camera_pan(1)[0]
        raise OSError(28, "No space left on device")

    with pytest.raises(VideoError, match="No space left"):
        video_writer.write_video(target, frames(), 12, None)
    assert target.read_bytes() == b"the user's earlier video"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mp4"]


def test_files_that_are_not_videos_get_a_clear_error(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(12))
    data = clip.read_bytes()
    (tmp_path / "truncated.mp4").write_bytes(data[: len(data) // 2])
    (tmp_path / "empty.mp4").write_bytes(b"")
    (tmp_path / "garbage.mov").write_bytes(b"\x00\x01 not a video " * 50)
    sound_only(tmp_path / "sound.mp4")
    cases = {
        "truncated.mp4": "not a video FFmpeg can read",
        "empty.mp4": "the file is empty",
        "garbage.mov": "not a video FFmpeg can read",
        "sound.mp4": "no video stream in this file (it holds audio)",
        "missing.mp4": "no such file",
    }
    for name, message in cases.items():
        with pytest.raises(VideoError, match=message.replace("(", r"\(").replace(")", r"\)")):
            video.probe(tmp_path / name)


def test_an_absurd_frame_size_is_refused_before_any_work(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "wide.mp4", [np.zeros((16, 8200, 3), np.uint8)] * 2)
    with pytest.raises(VideoError, match=r"8200×16 pixels a frame is beyond what Style Studio renders"):
        video.probe(clip)


def test_outputs_that_cannot_be_written_are_refused_first(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match=r"cannot write '\.avi' videos; use \.gif, \.m4v, \.mov, \.mp4, \.webm"):
        video.check_output(tmp_path / "out.avi")
    with pytest.raises(VideoError, match="does not exist"):
        video.check_output(tmp_path / "missing" / "out.mp4")


def test_too_many_frames_are_refused_with_what_they_would_take(tmp_path: Path, monkeypatch) -> None:
    clip = write_clip(tmp_path / "long.mp4", camera_pan(12))
    monkeypatch.setattr(video, "MAX_FRAMES", 10)  # a real 100,000-frame clip takes minutes to make
    with pytest.raises(VideoError, match=r"about 12 frames .* \(at most 10; .* hours\): style a part with --start"):
        video.probe(clip)
