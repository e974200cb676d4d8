"""A video in the window: its frames as the content, Render video, and the result scrubbed frame by frame."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

from style_studio.core.io import video
from style_studio.ui.pictures import InputImage
from tests.clips import camera_pan, write_clip
from tests.conftest import SAMPLES
from tests.ui.conftest import FAST
from tests.ui.test_window import drop, files

VIDEO_FAST = dataclasses.replace(FAST, size=64, iterations=4, scales=1)


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return write_clip(tmp_path / "pan.mp4", camera_pan(5), sound="aac")


def test_opening_a_video_shows_its_first_frame_and_a_frame_slider(window, clip) -> None:
    window.inputs.use_as_content(InputImage.from_file(clip))
    content = window.inputs.content
    assert content.clip is not None and (content.clip.frame, content.clip.frames) == (0, 5)
    assert window.inputs.frame_slider.isVisibleTo(window.inputs) and window.inputs.frame_slider.maximum() == 4
    assert window.commands.style_clip.isEnabled()
    window.inputs.show_frame(3)
    content = window.inputs.content
    assert content.clip.frame == 3
    frames = [f.picture for f in video.read_frames(clip)]
    assert np.array_equal(np.asarray(content.image), frames[3])
    assert "frame 4/5" in content.size_text
    window.inputs.show_frame(4)  # the last: found though the file's rate and its frames' stamps differ a little
    assert window.inputs.content.clip.frame == 4 and np.array_equal(np.asarray(window.inputs.content.image), frames[4])


def shown_pixels(window) -> np.ndarray:
    image = window.view._image.toImage().convertToFormat(QImage.Format.Format_RGB888)
    rows = [np.frombuffer(image.constScanLine(y), np.uint8, 3 * image.width()) for y in range(image.height())]
    return np.stack(rows).reshape(image.height(), image.width(), 3)


def test_a_dropped_video_becomes_the_content(window, clip) -> None:
    drop(window.inputs.content_zone, files(clip))
    assert window.inputs.content.name == "pan.mp4" and window.inputs.content.clip.frames == 5


def test_the_video_options_show_only_for_a_video(window, clip) -> None:
    assert not window.inputs.video_options.isVisibleTo(window.inputs)
    window.inputs.use_as_content(InputImage.from_file(clip))
    assert window.inputs.video_options.isVisibleTo(window.inputs)
    window.inputs.use_as_content(InputImage.from_file(SAMPLES / "content" / "coffee.png"))
    assert not window.inputs.video_options.isVisibleTo(window.inputs)
    assert not window.inputs.frame_slider.isVisibleTo(window.inputs)
    assert not window.commands.style_clip.isEnabled()


def test_a_video_cannot_be_a_style(window, clip) -> None:
    messages = []
    window.inputs.error.connect(messages.append)
    rows = len(window.inputs.style_rows)
    window.inputs.use_as_style(InputImage.from_file(clip))
    assert len(window.inputs.style_rows) == rows
    assert "is a video: a style is a picture" in messages[-1]


def test_render_video_writes_the_clip_with_its_sound_and_scrubs_the_result(make_window, qtbot, clip, tmp_path):
    window = make_window(VIDEO_FAST)
    window.inputs.use_as_content(InputImage.from_file(clip))
    assert window.inputs.video_options.isVisibleTo(window.inputs)
    window.inputs.video_options.fields["frame_iterations"].widget.setValue(3)  # the frames after the first
    out = tmp_path / "styled.mp4"
    iterations = []
    window.video.start(out)
    window.video.task.progressed.connect(lambda r: iterations.append((r.frame, r.progress.iterations)))
    assert window.video.running and not window.commands.start.isEnabled()
    with qtbot.waitSignal(window.video.task.finished, timeout=120_000):
        pass
    assert {n for frame, n in iterations if frame > 1} == {3}
    assert window.loss_plot.series("total")  # the last frame's curves
    assert not window.video.running
    info = video.probe(out)
    assert info.frame_count == 5 and info.sound == "aac"
    window.inputs.show_frame(2)  # the view shows frame 3 of the result, not of the clip
    result = [f.picture for f in video.read_frames(out)][2]
    assert np.array_equal(shown_pixels(window), result)
    assert len(window.loss_plot.series("total")) == 3  # the loss plot is that frame's: 3 iterations
    window.inputs.show_frame(0)
    assert len(window.loss_plot.series("total")) == 4
    window.inputs.show_frame(2)

    played = record_playing(window)
    with qtbot.waitSignal(window.video.player.stopped, timeout=10_000):
        window.commands.play.trigger()  # Space: the styled video from the frame shown, its source beside it
    styled = [f.picture for f in video.read_frames(out)]
    source = [f.picture for f in video.read_frames(clip)]
    assert [n for n, _, _ in played] == [2, 3, 4]
    for number, shown, before in played:
        assert np.array_equal(shown, styled[number]) and np.array_equal(before, source[number])

    entry = window.history.entries[-1]  # the history keeps the video, its first frame as its picture
    assert entry.video == out and np.array_equal(np.asarray(entry.result), styled[0])
    assert [text for text, _ in window.history.commands(entry)][:2] == ["Play the video", "Show in its folder"]
    window.state.show(entry)
    assert not window.commands.export.isEnabled()  # written already: played, not exported
    window.close()
    again = make_window(VIDEO_FAST)  # kept across a restart while the file is there
    assert [e.video for e in again.history.entries] == [out]
    again.close()
    written = out.read_bytes()
    out.unlink()  # moved, or on a drive not connected at the next start
    told: list[str] = []
    window.history.failed.connect(told.append)
    dict(window.history.commands(entry))["Look for styled.mp4 again"]()
    assert window.history.item(window.history.count() - 1).text().endswith("missing")
    later = make_window(VIDEO_FAST)
    (kept,) = later.history.entries  # not deleted: shown as missing
    assert kept.video == out and kept.missing
    assert later.history.item(0).text() == "#1 missing" and "Missing: " in later.history.item(0).toolTip()
    out.write_bytes(written)  # the drive is back
    later.history.recheck()
    assert later.history.item(0).text() == "#1" and "Missing" not in later.history.item(0).toolTip()
    out.unlink()
    dict(later.history.commands(kept))["Remove from history"]()  # the user lets it go
    assert later.history.entries == []
    later.close()
    assert make_window(VIDEO_FAST).history.entries == [] and not told


def test_stopping_a_video_render_keeps_its_frames_for_the_next_one(make_window, qtbot, clip, tmp_path):
    window = make_window(VIDEO_FAST)
    window.inputs.use_as_content(InputImage.from_file(clip))
    out = tmp_path / "styled.mp4"
    window.video.start(out)
    task = window.video.task
    qtbot.waitUntil(lambda: "frame 2 of 5" in window.statusBar().currentMessage(), timeout=60_000)
    with qtbot.waitSignal(task.finished, timeout=60_000):
        window.commands.stop.trigger()
    assert not out.exists()
    assert "finished frames are kept" in window.banner.text()


def test_a_queued_video_is_rendered_whole_paused_between_frames_and_skipped_once_made(make_window, qtbot, clip,
                                                                                        tmp_path) -> None:  # fmt: skip
    from style_studio.core.io.files import cache_folder

    window = make_window(VIDEO_FAST)
    window.inputs.use_as_content(InputImage.from_file(clip))
    window.inputs.video_options.fields["frame_iterations"].widget.setValue(5)
    assert window.intake.add(tmp_path / "out")
    item = window.queue.queue.items[0]
    assert item.job.output == tmp_path / "out" / "pan-starry_night.mp4"
    assert item.job.video is not None and item.job.video.frame_iterations == 5
    qtbot.waitUntil(lambda: window.queue.progress_text == "frame 3/5", timeout=60_000)
    window.queue.set_paused(True)
    qtbot.waitUntil(lambda: not window.queue.busy, timeout=60_000)
    assert item.word == "waiting" and not item.job.output.exists()
    assert len(list((cache_folder() / "videos").glob("*/frame-*.png"))) >= 2  # kept for the next go
    window.queue.set_paused(False)
    qtbot.waitUntil(lambda: item.word == "done", timeout=60_000)
    assert video.probe(item.job.output).frame_count == 5
    window.queue.retry(item.id)  # the same job again: already made
    qtbot.waitUntil(lambda: item.word == "done", timeout=10_000)
    assert "(already made)" in item.reason


def record_playing(window) -> list[tuple[int, np.ndarray, np.ndarray]]:
    played: list[tuple[int, np.ndarray, np.ndarray]] = []
    window.video.player.frame.connect(lambda number, shown, before: played.append((number, shown, before)))
    return played


def test_space_plays_the_clip_at_its_rate_and_pausing_makes_the_frame_shown_the_content(window, qtbot, clip):
    window.inputs.use_as_content(InputImage.from_file(clip))
    assert window.commands.play.isEnabled() and window.commands.play.shortcut().toString() == "Space"
    rate = window.inputs.content.clip.rate
    played = record_playing(window)
    began = time.perf_counter()
    with qtbot.waitSignal(window.video.player.stopped, timeout=10_000):
        window.commands.play.trigger()
    took = time.perf_counter() - began
    assert [n for n, _, _ in played] == [0, 1, 2, 3, 4]
    assert took >= 4 / rate * 0.9  # its own rate, not as fast as frames decode
    assert window.inputs.frame_slider.value() == 4 and window.inputs.content.clip.frame == 4  # stopped at the end
    source = [f.picture for f in video.read_frames(clip)]
    assert all(np.array_equal(shown, source[n]) and shown is before for n, shown, before in played)

    played.clear()
    window.commands.play.trigger()  # from the end: again from the start
    qtbot.waitUntil(lambda: len(played) >= 2)
    with qtbot.waitSignal(window.video.player.stopped) as paused:
        window.commands.play.trigger()  # Space again: pause on the frame shown
    assert paused.args == [played[-1][0]] and played[0][0] == 0
    assert window.inputs.content.clip.frame == played[-1][0]
    assert np.array_equal(np.asarray(window.inputs.content.image), played[-1][1])


def test_play_is_offered_only_for_a_video(window, clip):
    assert not window.commands.play.isEnabled()
    window.inputs.use_as_content(InputImage.from_file(clip))
    assert window.commands.play.isEnabled()
    window.inputs.use_as_content(InputImage.from_file(SAMPLES / "content" / "coffee.png"))
    assert not window.commands.play.isEnabled()
