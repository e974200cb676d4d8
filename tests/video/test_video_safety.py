"""``style-studio video`` never loses a user's files or frames, and reads the clips cameras make.

Each test is one of the faults found by trying the command as a user would
(issue #32): a folder output deleted, an output that is the input, kept frames
dropped, a full cache, offset and reset timestamps, 44.1 kHz sound in .webm,
NaN options, thin clips, two renders to one output, a leaked clip copy.
"""

from __future__ import annotations

import io
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from style_studio.cli import main
from style_studio.core.io import video
from style_studio.core.io.files import cache_folder
from tests.clips import camera_pan, streams_of, textured, write_clip

QUICK = ["--size", "64", "--iterations", "4", "--frame-iterations", "2", "--weights", "untrained"]


@pytest.fixture(autouse=True)
def _tiny(tiny_network: None) -> None:
    """The tiny test network for "untrained"."""


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return write_clip(tmp_path / "pan.mp4", camera_pan(4), sound="aac")


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def kept_frames() -> list[Path]:
    return sorted((cache_folder() / "videos").glob("*/frame-*.png"))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# 1. A folder output never deletes an existing folder --------------------------------------------------------------


def test_a_folder_holding_the_users_files_is_refused_up_front_and_kept(tmp_path: Path, clip: Path, style: Path) -> None:
    videos = tmp_path / "Videos"
    videos.mkdir(mode=0o755)
    (videos / "holiday.mov").write_bytes(b"the user's film")
    code, _, err = run("video", clip, style, "-o", videos, *QUICK)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "did not write" in err and "using untrained" not in err  # refused before anything loads
    assert snapshot(videos) == {"holiday.mov": b"the user's film"}
    assert oct(videos.stat().st_mode & 0o777) == oct(0o755)


def test_the_folder_holding_the_clip_is_refused_and_the_clip_kept(
    tmp_path: Path, clip: Path, style: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, err = run("video", "pan.mp4", "style.png", "-o", ".", *QUICK)
    assert code == 2 and "holds the job's input pan.mp4" in err, err
    assert snapshot(tmp_path) == before


def test_a_new_folder_gets_the_frames_and_the_same_render_may_write_over_its_own(
    tmp_path: Path, clip: Path, style: Path
) -> None:
    frames = tmp_path / "frames"
    assert run("video", clip, style, "-o", frames, *QUICK)[0] == 0
    assert sorted(p.name for p in frames.iterdir()) == [f"frame-00000{n}.png" for n in range(1, 5)]
    assert run("video", clip, style, "-o", frames, *QUICK)[0] == 0  # the same job: its own frames replaced
    code, _, err = run("video", clip, style, "-o", frames, *QUICK, "--seed", "7")
    assert code == 2 and "did not write" in err  # another render's frames are not this one's to replace


# 2. The output may not be the input -------------------------------------------------------------------------------


def test_an_output_that_is_the_clip_or_a_style_is_refused(tmp_path: Path, clip: Path, style: Path) -> None:
    (tmp_path / "alias.mp4").symlink_to(clip)
    before = snapshot(tmp_path)
    for output in [clip, tmp_path / "alias.mp4", tmp_path / "sub" / ".." / "pan.mp4"]:
        (tmp_path / "sub").mkdir(exist_ok=True)
        code, _, err = run("video", clip, style, "-o", output, *QUICK)
        assert code == 2 and "is one of the job's inputs (pan.mp4)" in err, err
    code, _, err = run(
        "render", style, style, "-o", style, "--size", "32", "--iterations", "1", "--weights", "untrained"
    )
    assert code == 2 and "is one of the job's inputs (style.png)" in err, err
    assert {k: v for k, v in snapshot(tmp_path).items() if k in before} == before


# 5. Kept frames are never dropped silently ------------------------------------------------------------------------


def stop_after(frames: int) -> object:
    """A progress hook that stops the render (as Ctrl+C does) once ``frames`` frames are kept."""

    def hook(record) -> None:
        if record.frame > frames:
            raise KeyboardInterrupt

    return hook


def interrupted_render(clip: Path, style: Path, output: Path, frames: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from style_studio.core.jobs import video_job

    real = video_job.frame_report

    def report(progress, number, *rest) -> None:
        if number > frames:
            raise KeyboardInterrupt
        real(progress, number, *rest)

    monkeypatch.setattr(video_job, "frame_report", report)
    assert run("video", clip, style, "-o", output, *QUICK)[0] == 130
    monkeypatch.setattr(video_job, "frame_report", real)


def test_kept_frames_are_named_and_kept_until_the_user_says_resume_or_restart(
    tmp_path: Path, clip: Path, style: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "styled.mp4"
    interrupted_render(clip, style, out, 2, monkeypatch)
    kept = {p.name: p.read_bytes() for p in kept_frames()}
    assert len(kept) == 2
    code, _, err = run("video", clip, style, "-o", out, *QUICK)
    assert code == 2 and "2 frame(s) from an earlier render" in err and "--resume" in err and "--restart" in err
    assert {p.name: p.read_bytes() for p in kept_frames()} == kept and not out.exists()
    code, _, err = run("video", clip, style, "-o", out, *QUICK, "--restart")
    assert code == 0, err
    assert "going on" not in err and out.is_file() and kept_frames() == []


def test_unreadable_kept_frames_are_set_aside_and_said_not_deleted(
    tmp_path: Path, clip: Path, style: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "styled.mp4"
    interrupted_render(clip, style, out, 2, monkeypatch)
    folder = kept_frames()[0].parent
    (folder / "state.json").write_text("{ damaged")
    code, _, err = run("video", clip, style, "-o", out, *QUICK)
    assert code == 0, err
    assert "could not be read" in err and "was moved to" in err
    aside = list(folder.parent.glob(f"{folder.name}.unreadable-*"))
    assert len(aside) == 1 and len(list(aside[0].glob("frame-*.png"))) == 2


@pytest.mark.parametrize("garbage", [b"garbage", b""], ids=["garbage", "empty"])
def test_a_kept_frame_overwritten_is_set_aside_and_styled_again_on_resume(
    tmp_path: Path, clip: Path, style: Path, monkeypatch: pytest.MonkeyPatch, garbage: bytes
) -> None:
    out = tmp_path / "styled.mp4"
    interrupted_render(clip, style, out, 3, monkeypatch)
    kept_frames()[1].write_bytes(garbage)  # frame 2
    code, _, err = run("video", clip, style, "-o", out, *QUICK, "--resume")
    assert code == 0, err
    assert "going on from frame 4" in err and "the kept frame 2 of a video could not be read" in err
    (moved,) = (cache_folder() / "videos.unreadable").glob("*-frame-000002.png.unreadable-*")
    assert moved.read_bytes() == garbage and str(moved) in err
    assert video.probe(out).frame_count == 4 and kept_frames() == []


def test_a_resume_that_finds_every_frame_kept_says_so_cleanly(
    tmp_path: Path, clip: Path, style: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from style_studio.core.jobs import video_job

    out = tmp_path / "styled.mp4"

    def no_room(*args, **kwargs):
        raise video.VideoError(f"{out}: cannot write the video (No space left on device)")

    real = video_job.write_video
    monkeypatch.setattr(video_job, "write_video", no_room)
    code, _, err = run("video", clip, style, "-o", out, *QUICK)
    assert code == 2, err
    monkeypatch.setattr(video_job, "write_video", real)
    assert len(kept_frames()) == 4
    code, _, err = run("video", clip, style, "-o", out, *QUICK, "--resume")
    assert code == 0, err
    assert "(4 frames," in err and ", )" not in err and "cpu" in err


# 6. A full disk or a read-only cache ------------------------------------------------------------------------------


def test_a_full_cache_is_one_line_and_the_frames_so_far_are_kept(
    tmp_path: Path, clip: Path, style: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from style_studio.core.jobs import video_job

    real = video_job.FrameCache.keep
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead

    def keep(self, number, *args) -> None:
        if number == 3:  # the disk fills after two frames
            resource.setrlimit(resource.RLIMIT_FSIZE, (64, limits[1]))
        try:
            real(self, number, *args)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, limits)

    monkeypatch.setattr(video_job.FrameCache, "keep", keep)
    try:
        code, _, err = run("video", clip, style, "-o", tmp_path / "styled.mp4", *QUICK)
    finally:
        signal.signal(signal.SIGXFSZ, previous)
    assert code == 2, err
    assert "Traceback" not in err and "frame 3 cannot be kept" in err and "the 2 frames before it are kept" in err
    assert len(kept_frames()) == 2


# 7. Clips whose clock does not start at 0, or starts again --------------------------------------------------------


def test_a_camera_clip_whose_clock_starts_at_100_s_is_timed_from_its_first_frame(tmp_path: Path, style: Path) -> None:
    clip = write_clip(tmp_path / "camera.ts", camera_pan(6), times=[100 + n / 10 for n in range(6)], rate=10,
                      sound="aac")  # fmt: skip
    info = video.probe(clip)
    assert info.start_time == pytest.approx(100.0, abs=0.01) and info.duration == pytest.approx(0.6, abs=0.05)
    out = tmp_path / "part.mp4"
    code, _, err = run("video", clip, style, "-o", out, *QUICK, "--start", "0.1", "--duration", "0.2")
    assert code == 0, err
    times = [f.time for f in video.read_frames(out)]
    assert len(times) == 2 and times[0] == pytest.approx(0.0, abs=1e-3) and times[1] == pytest.approx(0.1, abs=0.01)
    with av.open(str(out)) as container:
        assert float(container.duration) / 1e6 < 1.0  # not 100.3 s
        assert [s.type for s in container.streams] == ["video", "audio"]


def test_a_clip_joined_from_parts_whose_clocks_start_again_keeps_its_frames_apart(tmp_path: Path) -> None:
    first = write_clip(tmp_path / "a.ts", camera_pan(4), times=[n / 10 for n in range(4)], rate=10)
    second = write_clip(tmp_path / "b.ts", camera_pan(4, seed=2), times=[n / 10 for n in range(4)], rate=10)
    joined = tmp_path / "joined.ts"
    joined.write_bytes(first.read_bytes() + second.read_bytes())
    times = [f.time for f in video.read_frames(joined)]
    assert len(times) == 8
    assert np.diff(times) == pytest.approx([0.1] * 7, abs=1e-3)


def test_a_clip_that_declares_1000_fps_for_four_frames_is_no_false_alarm(tmp_path: Path, style: Path) -> None:
    clip = write_clip(tmp_path / "declared.mkv", camera_pan(4), rate=1000, times=[0, 0.1, 0.2, 0.3])
    code, _, err = run("video", clip, style, "-o", tmp_path / "out.mp4", *QUICK)
    assert code == 0, err
    assert "damaged or cut short" not in err


# 8. What can be written is known before the first frame -----------------------------------------------------------


def test_webm_output_of_44_1_khz_sound_is_resampled_for_opus(tmp_path: Path, style: Path) -> None:
    clip = write_clip(tmp_path / "cd.mp4", camera_pan(3), sound="aac", sound_rate=44100)
    code, _, err = run("video", clip, style, "-o", tmp_path / "out.webm", *QUICK)
    assert code == 0, err
    assert streams_of(tmp_path / "out.webm") == {"video": "vp9", "audio": "opus"}
    with av.open(str(tmp_path / "out.webm")) as container:
        assert container.streams.audio[0].codec_context.sample_rate == 48000


def test_an_output_the_encoder_refuses_fails_before_the_first_frame(
    tmp_path: Path, clip: Path, style: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from style_studio.core.jobs import video_job

    broken = video.OutputKind("webm", "no-such-encoder", "yuv420p", frozenset(), None)
    monkeypatch.setitem(video.OUTPUT_KINDS, ".webm", broken)
    made: list[int] = []
    monkeypatch.setattr(video_job.FrameStyler, "style", lambda *args: made.append(1))
    code, _, err = run("video", clip, style, "-o", tmp_path / "out.webm", *QUICK)
    assert code == 2 and "cannot write the video" in err, err
    assert made == [] and sorted(p.name for p in tmp_path.iterdir()) == ["pan.mp4", "style.png"]


# 9. Options that are not numbers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"), [("--start", "nan"), ("--duration", "nan"), ("--start", "inf"), ("--duration", "-inf")]
)
def test_a_nan_or_infinite_time_is_refused_up_front(
    tmp_path: Path, clip: Path, style: Path, option: str, value: str
) -> None:
    code, _, err = run("video", clip, style, "-o", tmp_path / "out.mp4", *QUICK, option, value)
    assert code == 2 and option in err and "using untrained" not in err, err
    assert not (tmp_path / "out.mp4").exists()


# 10. Thin clips ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(400, 6), (2, 200)])
def test_a_thin_clip_is_one_clear_line_or_renders_at_a_size_that_fits(
    tmp_path: Path, style: Path, size: tuple[int, int]
) -> None:
    width, height = size
    clip = write_clip(tmp_path / "thin.mkv", [textured(width, height, seed=n) for n in range(3)], codec="ffv1",
                      pix_fmt="bgr0")  # fmt: skip
    code, _, err = run("video", clip, style, "-o", tmp_path / "out.mp4", *QUICK)
    assert code == 2 and "at least 16 pixels are needed on each side" in err and "Traceback" not in err, err
    big = ["--size", "1700", "--scales", "1", "--iterations", "1", "--frame-iterations", "1", "--weights", "untrained"]
    code, _, err = run("video", clip, style, "-o", tmp_path / "out.mp4", *big)
    assert code == 0, err
    info = video.probe(tmp_path / "out.mp4")
    assert min(info.width, info.height) >= 16 and info.width % 2 == 0 and info.height % 2 == 0


# 13. Two renders to one output ------------------------------------------------------------------------------------


def test_a_second_render_to_the_same_output_is_refused_while_the_first_runs(
    tmp_path: Path, clip: Path, style: Path
) -> None:
    out = tmp_path / "styled.mp4"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from style_studio.core.io.outputs import Output\n"
         f"with Output(Path({str(out)!r})).claim():\n    print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, _, err = run("video", clip, style, "-o", out, *QUICK, "--seed", "3")  # other settings: another job
        assert code == 2 and "being written by another Style Studio process" in err, err
    finally:
        holder.communicate("", timeout=60)
    assert not out.exists()


# 14. A batch's video job leaks nothing, and does not hold the clip in memory --------------------------------------


def test_a_failed_batch_video_job_leaves_no_copy_of_the_clip(
    tmp_path: Path, clip: Path, style: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from style_studio.core import Job, JobInputs, StyleStudioError, VideoOptions
    from style_studio.core.jobs import video_job
    from style_studio.core.network.weights import load_weights
    from style_studio.core.settings import DEFAULTS

    def fails(*args, **kwargs):
        raise StyleStudioError("out of memory")

    monkeypatch.setattr(video_job, "_render_video", fails)
    job = Job("1", clip, (style,), DEFAULTS, tmp_path / "out" / "pan.mp4", video=VideoOptions())
    for local in (False, True):
        inputs = JobInputs.read(job, local=local)
        assert (inputs.content == b"") == local  # on this machine the clip is read where it is
        with pytest.raises(StyleStudioError):
            video_job._render_video_inputs(inputs, load_weights("untrained"))
        assert list((cache_folder() / "videos").iterdir()) == []
