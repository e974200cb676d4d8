"""Videos in a batch: jobs of the one job model, from arguments or a jobs file, skipped once made."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from style_studio.core.io import video
from tests.cli.test_cli import run_cli
from tests.clips import camera_pan, streams_of, write_clip
from tests.conftest import SAMPLES

FAST = ["--size", "48", "--iterations", "6", "--frame-iterations", "3", "--scales", "1", "--weights", "untrained"]
STYLE = str(SAMPLES / "style" / "starry_night.jpg")


def test_a_batch_styles_videos_and_pictures_and_skips_them_once_made(tmp_path: Path, tiny_network: None) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(4), sound="aac")
    photo = str(SAMPLES / "content" / "chelsea.png")
    out = tmp_path / "out"
    code, _, err = run_cli("batch", str(clip), photo, "--style", STYLE, "-o", str(out), *FAST)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["chelsea-starry_night.png", "pan-starry_night.mp4"]
    assert streams_of(out / "pan-starry_night.mp4") == {"video": "h264", "audio": "aac"}
    assert video.probe(out / "pan-starry_night.mp4").frame_count == 4
    code, stdout, err = run_cli("batch", str(clip), photo, "--style", STYLE, "-o", str(out), *FAST,
                                "--progress", "json")  # fmt: skip
    assert code == 0, err
    outcomes = [r for r in map(json.loads, stdout.splitlines()) if "status" in r]
    assert [o["status"] for o in outcomes] == ["skipped", "skipped"], stdout


def test_a_jobs_file_takes_a_video_with_its_frame_options(tmp_path: Path, tiny_network: None) -> None:
    write_clip(tmp_path / "pan.mp4", camera_pan(6))
    Image.open(STYLE).save(tmp_path / "style.png")
    (tmp_path / "jobs.toml").write_text(
        '[[jobs]]\nid = "clip"\ncontent = "pan.mp4"\nstyle = "style.png"\noutput = "clip.webm"\n'
        "video = { frame_iterations = 2, start = 0.25, duration = 0.25 }\n"
    )
    code, stdout, err = run_cli("batch", "--jobs", str(tmp_path / "jobs.toml"), "-o", str(tmp_path / "out"),
                                *FAST, "--progress", "json")  # fmt: skip
    assert code == 0, err
    records = [json.loads(line) for line in stdout.splitlines()]
    progress = [r for r in records if "frame" in r]
    assert {r["frames"] for r in progress} == {3}
    assert max(r["iterations"] for r in progress if r["frame"] > 1) == 2
    frames = [f.picture for f in video.read_frames(tmp_path / "out" / "clip.webm")]
    assert len(frames) == 3 and np.asarray(frames).std() > 0


def test_a_jobs_file_with_a_bad_video_entry_says_what_is_wrong(tmp_path: Path) -> None:
    write_clip(tmp_path / "pan.mp4", camera_pan(2))
    (tmp_path / "jobs.toml").write_text(
        '[[jobs]]\ncontent = "pan.mp4"\nstyle = "style.png"\noutput = "clip.png"\nvideo = { speed = 2 }\n'
    )
    code, _, err = run_cli("batch", "--jobs", str(tmp_path / "jobs.toml"), "-o", str(tmp_path / "out"), *FAST)
    assert code == 2
    assert "unknown video entry 'speed'" in err and "needs a .gif, .m4v, .mov, .mp4, .webm name" in err


def test_a_clip_read_where_it_is_carries_its_bytes_and_the_same_key_to_a_worker_elsewhere(tmp_path: Path) -> None:
    from style_studio.core import Job, JobInputs, VideoOptions
    from style_studio.core import settings as settings_mod

    clip = write_clip(tmp_path / "pan.mp4", camera_pan(3))
    job = Job("1", clip, (SAMPLES / "style" / "starry_night.jpg",), settings_mod.DEFAULTS, tmp_path / "out.mp4",
              video=VideoOptions())  # fmt: skip
    here = JobInputs.read(job, local=True)
    assert here.content == b"" and here.content_file == clip  # a long clip is not read whole to be keyed
    carried = here.carried()
    assert carried.content == clip.read_bytes() and carried.content_file is None
    assert carried.key == here.key == JobInputs.read(job, local=False).key
    clip.unlink()
    with pytest.raises(OSError):  # gone before its task went: the batch says so for that job
        here.carried()
