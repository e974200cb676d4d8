"""``style-studio batch``: many pictures, resumable, in this process, in worker processes and on a real Ray instance."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from style_studio.core import settings as settings_mod
from style_studio.core.io.imageio import read_metadata
from style_studio.core.jobs.job import JOB_KEY
from tests.cli.test_cli import run_cli
from tests.conftest import SAMPLES

# Real Ray instances, worker processes and batches killed mid-job.
pytestmark = pytest.mark.slow

PHOTOS = [str(SAMPLES / "content" / "chelsea.png"), str(SAMPLES / "content" / "coffee.png")]
STYLES = [str(SAMPLES / "style" / "starry_night.jpg"), str(SAMPLES / "style" / "the_scream.jpg")]
FAST = ["--size", "48", "--iterations", "4", "--scales", "1", "--weights", "untrained"]


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"), np.int16)


def test_every_photo_with_every_style_then_a_second_run_skips_them_all(tmp_path):
    code, _, err = run_cli("batch", *PHOTOS, "--style", *STYLES, "-o", str(tmp_path / "out"), *FAST)
    assert code == 0, err
    outputs = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert outputs == [
        "chelsea-starry_night.png", "chelsea-the_scream.png", "coffee-starry_night.png", "coffee-the_scream.png",
    ]  # fmt: skip
    metadata = json.loads(read_metadata(tmp_path / "out" / outputs[0]))
    assert settings_mod.loads(json.dumps(metadata)).size == 48 and len(metadata[JOB_KEY]) == 32
    assert "4 done" in err
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()}
    code, _, err = run_cli("batch", *PHOTOS, "--style", *STYLES, "-o", str(tmp_path / "out"), *FAST)
    assert code == 0 and "4 skipped" in err
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()} == stamps
    # Other settings are another job: done again.
    code, _, err = run_cli("batch", PHOTOS[0], "--style", STYLES[0], "-o", str(tmp_path / "out"), *FAST, "--seed", "7")
    assert code == 0 and "1 done" in err


def test_a_failing_job_is_reported_and_the_others_go_on(tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_text("not a picture")
    code, out, _ = run_cli(
        "batch", PHOTOS[0], str(broken), "--style", STYLES[0], "-o", str(tmp_path / "out"), *FAST, "--progress", "json"
    )
    assert code == 1
    summary = json.loads(out.splitlines()[-1])["summary"]
    assert [(s["job"], s["status"]) for s in summary] == [("1", "done"), ("2", "failed")]
    assert "broken.png" in summary[1]["reason"]
    assert (tmp_path / "out" / "chelsea-starry_night.png").exists()
    assert not (tmp_path / "out" / "broken-starry_night.png").exists()


def test_json_progress_records_carry_the_job(tmp_path):
    code, out, _ = run_cli(
        "batch", *PHOTOS, "--style", STYLES[0], "-o", str(tmp_path), *FAST, "--progress", "json"
    )  # fmt: skip
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    iterations = [r for r in records if "iteration" in r]
    assert {r["job"] for r in iterations} == {"1", "2"}
    assert [r["status"] for r in records if "status" in r] == ["done", "done"]


JOBS_TOML = """
preset = "preset.json"

[settings]
iterations = 3

[[jobs]]
id = "cat"
content = "{chelsea}"
styles = ["{starry}", "{scream}"]
settings = {{ style_blend = [2, 1], seed = 5 }}
output = "cat.webp"

[[jobs]]
content = "{coffee}"
style = "{starry}"
"""


def test_a_jobs_file_with_a_preset_and_overrides(tmp_path):
    settings = settings_mod.from_dict({"size": 40, "scales": 1, "weights": "untrained"})
    (tmp_path / "preset.json").write_text(settings_mod.dumps(settings))
    jobs = tmp_path / "jobs.toml"
    jobs.write_text(
        JOBS_TOML.format(chelsea=PHOTOS[0], coffee=PHOTOS[1], starry=STYLES[0], scream=STYLES[1]).replace("\\", "/")
    )
    code, _, err = run_cli("batch", "--jobs", str(jobs), "-o", str(tmp_path / "out"))
    assert code == 0, err
    cat = settings_mod.loads(read_metadata(tmp_path / "out" / "cat.webp"))
    assert (cat.size, cat.iterations, cat.seed, cat.style_blend) == (40, 3, 5, (2.0, 1.0))
    assert (tmp_path / "out" / "coffee-starry_night.png").exists()


def test_a_bad_jobs_file_lists_every_problem_and_runs_nothing(tmp_path):
    jobs = tmp_path / "jobs.json"
    jobs.write_text(
        json.dumps(
            {
                "colour": "red",
                "jobs": [
                    {"content": PHOTOS[0], "styles": [STYLES[0]], "settings": {"size": 5}},
                    {"styles": [STYLES[0]]},
                    {"content": PHOTOS[0], "styles": [STYLES[0]], "output": "x.gif"},
                    {"content": "missing.png", "styles": [STYLES[0]], "output": "y.png"},
                ],
            }
        )
    )
    code, _, err = run_cli("batch", "--jobs", str(jobs), "-o", str(tmp_path / "out"), *FAST)
    assert code == 2
    for problem in (
        "unknown entry 'colour'",
        "job 1: size must be",
        "job 2: no content photo",
        "job 3: the output 'x.gif'",
    ):
        assert problem in err
    assert not (tmp_path / "out").exists()
    jobs.write_text(json.dumps({"jobs": [{"content": "missing.png", "styles": [STYLES[0]]}]}))
    code, _, err = run_cli("batch", "--jobs", str(jobs), "-o", str(tmp_path / "out"), *FAST)
    assert code == 2 and "missing.png does not exist" in err


def test_options_override_a_preset(tmp_path):
    preset = tmp_path / "preset.json"
    preset.write_text(settings_mod.dumps(settings_mod.from_dict({"size": 56, "style_weight": 9.0})))
    code, _, err = run_cli(
        "batch", PHOTOS[0], "--style", STYLES[0], "-o", str(tmp_path), "--preset", str(preset), *FAST
    )  # fmt: skip
    assert code == 0, err
    made = settings_mod.loads(read_metadata(tmp_path / "chelsea-starry_night.png"))
    assert made.size == 48 and made.style_weight == 9.0  # --size typed, style weight from the preset


def batch_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "style_studio", "batch", *args]


def test_a_killed_batch_is_finished_by_running_it_again_and_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "out"
    slow = ["--size", "64", "--iterations", "400", "--scales", "1", "--weights", "untrained", "--progress", "json"]
    args = batch_command(*PHOTOS, "--style", STYLES[0], "-o", str(out), *slow)
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    for line in process.stdout:  # the first job written, the second under way
        record = json.loads(line)
        if record.get("job") == "2" and record.get("iteration", 0) >= 2:
            break
    process.kill()
    process.wait()
    assert [p.name for p in out.iterdir()] == ["chelsea-starry_night.png"]
    # What a kill mid-write leaves: the killed process's temporary, swept by the next run.
    (out / f".coffee-starry_night.png.ss-{process.pid}-0123abcd.part").write_bytes(b"half a picture")
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    statuses = [s["status"] for s in json.loads(done.stdout.splitlines()[-1])["summary"]]
    assert statuses == ["skipped", "done"]
    assert sorted(p.name for p in out.iterdir()) == ["chelsea-starry_night.png", "coffee-starry_night.png"]


def test_a_batch_stopped_with_sigterm_keeps_finished_pictures_and_says_so(tmp_path):
    # kill's default signal, as a job scheduler sends it: stopped as Ctrl+C stops it.
    out = tmp_path / "out"
    slow = ["--size", "64", "--iterations", "400", "--scales", "1", "--weights", "untrained", "--progress", "json"]
    with (tmp_path / "stderr.txt").open("w") as stderr:  # a file: a full pipe nobody reads would stall the batch
        process = subprocess.Popen(
            batch_command(*PHOTOS, "--style", STYLES[0], "-o", str(out), *slow),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        assert process.stdout is not None
        for line in process.stdout:  # the first job written, the second under way
            record = json.loads(line)
            if record.get("job") == "2" and record.get("iteration", 0) >= 2:
                process.send_signal(signal.SIGTERM)
                break
        process.communicate(timeout=120)
    err = (tmp_path / "stderr.txt").read_text()
    assert process.returncode == 130, err
    assert "finished pictures are kept" in err
    assert [p.name for p in out.iterdir()] == ["chelsea-starry_night.png"]


def test_two_worker_processes_make_the_same_pictures(tmp_path):
    code, _, err = run_cli("batch", *PHOTOS, "--style", *STYLES, "-o", str(tmp_path / "one"), *FAST)
    assert code == 0, err
    code, _, err = run_cli(
        "batch", *PHOTOS, "--style", *STYLES, "-o", str(tmp_path / "two"), *FAST, "--workers", "2"
    )  # fmt: skip
    assert code == 0, err
    for made in (tmp_path / "one").iterdir():
        assert np.abs(pixels(made) - pixels(tmp_path / "two" / made.name)).max() <= 2, made.name


def test_ray_missing_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    code, _, err = run_cli("batch", PHOTOS[0], "--style", STYLES[0], "-o", str(tmp_path), *FAST, "--ray", "auto")
    assert code == 2 and "pip install 'style-studio[cluster]'" in err


# -- a real local Ray instance ----------------------------------------------------------------


def test_three_jobs_on_ray_make_the_pictures_this_process_makes(tmp_path, ray_address):
    local = ["batch", *PHOTOS, "--style", STYLES[0], "-o", str(tmp_path / "local"), *FAST]
    code, _, err = run_cli(*local)
    assert code == 0, err
    three = [*PHOTOS, str(SAMPLES / "content" / "rocket.jpg")]
    code, _, err = run_cli(
        "batch", *three, "--style", STYLES[0], "-o", str(tmp_path / "ray"), *FAST, "--ray", ray_address
    )  # fmt: skip
    assert code == 0, err
    assert f"on Ray at {ray_address}: 1 node(s), 2 CPUs" in err and "3 done" in err
    for made in (tmp_path / "local").iterdir():
        assert np.abs(pixels(made) - pixels(tmp_path / "ray" / made.name)).max() <= 2, made.name


def test_a_job_that_fails_on_a_worker_is_reported_with_its_reason(tmp_path, ray_address):
    thin = tmp_path / "thin.png"
    Image.new("RGB", (400, 4), "white").save(thin)  # decodes here; too thin for the network there
    code, out, _ = run_cli(
        "batch", PHOTOS[0], str(thin), "--style", STYLES[0], "-o", str(tmp_path / "out"), *FAST,
        "--ray", ray_address, "--progress", "json",
    )  # fmt: skip
    assert code == 1
    summary = {s["job"]: s for s in json.loads(out.splitlines()[-1])["summary"]}
    assert summary["1"]["status"] == "done" and summary["2"]["status"] == "failed"
    assert "thin" in summary["2"]["reason"] or "pixels" in summary["2"]["reason"]


def test_stopping_a_ray_batch_keeps_finished_pictures_and_no_half_written_file(tmp_path, ray_address):
    out = tmp_path / "out"
    # Far more iterations than the test waits for: the stop lands while every task is under way.
    slow = ["--size", "64", "--iterations", "3000", "--scales", "1", "--weights", "untrained"]
    quick = batch_command(PHOTOS[0], "--style", STYLES[0], "-o", str(out), "--size", "48", "--iterations", "3",
                          "--scales", "1", "--weights", "untrained")  # fmt: skip
    assert subprocess.run(quick, capture_output=True, timeout=300).returncode == 0
    finished = read_metadata(out / "chelsea-starry_night.png")
    args = batch_command(*PHOTOS, "--style", *STYLES, "-o", str(out), *slow, "--ray", ray_address, "--progress", "none")
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:  # connected: the tasks go out next
        if "on Ray at " in line:
            break
    time.sleep(3)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "finished pictures are kept" in err
    assert not list(out.glob(".*.part"))
    for made in out.iterdir():
        assert read_metadata(made) is not None  # whole pictures only
    assert read_metadata(out / "chelsea-starry_night.png") == finished


def test_a_batch_stopped_while_it_joins_the_cluster_exits_as_stopped(tmp_path, ray_address, monkeypatch):
    from style_studio.cli import ray_cluster

    def interrupted(self):
        raise KeyboardInterrupt  # Ctrl+C while ray.init waits for the cluster

    monkeypatch.setattr(ray_cluster.RayCluster, "connect", interrupted)
    code, _, err = run_cli("batch", PHOTOS[0], "--style", STYLES[0], "-o", str(tmp_path), *FAST, "--ray", ray_address)
    assert code == 130
    assert "finished pictures are kept" in err and "Traceback" not in err


def test_worker_processes_take_the_gpus_in_turn_where_there_are_several():
    from style_studio.cli.runners import gpu_share

    assert gpu_share(2, 0) is None and gpu_share(4, 1) is None  # one device (or none): every worker shares it
    assert gpu_share(3, 2) == [0, 1, 0]
    assert gpu_share(2, 4) == [0, 1]


def test_a_video_is_one_task_on_ray_and_comes_back_as_this_process_makes_it(tmp_path, ray_address):
    from style_studio.core.io.video import read_frames
    from tests.clips import camera_pan, streams_of, write_clip

    clip = write_clip(tmp_path / "pan.mp4", camera_pan(4), sound="aac")
    video_fast = [*FAST, "--frame-iterations", "3"]
    code, _, err = run_cli("batch", str(clip), "--style", STYLES[0], "-o", str(tmp_path / "local"), *video_fast)
    assert code == 0, err
    code, _, err = run_cli("batch", str(clip), PHOTOS[0], "--style", STYLES[0], "-o", str(tmp_path / "ray"),
                           *video_fast, "--ray", ray_address)  # fmt: skip
    assert code == 0, err
    assert "2 done" in err
    made = tmp_path / "ray" / "pan-starry_night.mp4"
    assert streams_of(made) == {"video": "h264", "audio": "aac"}
    local = [f.picture.astype(int) for f in read_frames(tmp_path / "local" / made.name)]
    remote = [f.picture.astype(int) for f in read_frames(made)]
    assert len(local) == len(remote) == 4
    assert max(np.abs(a - b).max() for a, b in zip(local, remote, strict=True)) <= 8


def test_a_clip_longer_than_a_chunk_goes_across_the_cluster_in_chunks_as_video_ray_makes_it(tmp_path, ray_address):
    from style_studio.core.io.video import read_frames, video_comment
    from tests.clips import camera_pan, write_clip

    clip = write_clip(tmp_path / "pan.mkv", camera_pan(7, size=(48, 32)), codec="ffv1", pix_fmt="bgr0")
    chunked = [*FAST, "--frame-iterations", "3", "--ray", ray_address, "--chunk-frames", "3", "--chunk-overlap", "1"]
    batch = ["batch", str(clip), PHOTOS[0], "--style", STYLES[0], "-o", str(tmp_path / "batch"), *chunked]
    code, out, err = run_cli(*batch, "--progress", "json")
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    steps = [r for r in records if r.get("job") == "1" and "chunks_done" in r]
    assert steps and all(r["steps"] == 7 and r["step"] <= 7 for r in steps), steps
    assert steps[-1]["frames_done"] == 7 and steps[-1]["chunks_done"] == 4  # the key frame and three chunks
    summary = {s["job"]: s for s in records[-1]["summary"]}
    assert summary["1"]["status"] == summary["2"]["status"] == "done", summary
    assert "7 frames in 3 chunks" in summary["1"]["reason"]
    made = tmp_path / "batch" / "pan-starry_night.mp4"
    assert json.loads(video_comment(made) or "{}")["chunks"] == [3, 1]
    code, _, err = run_cli("video", str(clip), STYLES[0], "-o", str(tmp_path / "video.mp4"), *chunked,
                           "--progress", "none")  # fmt: skip
    assert code == 0, err
    batch_frames = [f.picture.astype(int) for f in read_frames(made)]
    video_frames = [f.picture.astype(int) for f in read_frames(tmp_path / "video.mp4")]
    assert len(batch_frames) == len(video_frames) == 7
    assert max(np.abs(a - b).max() for a, b in zip(batch_frames, video_frames, strict=True)) <= 8
    code, _, err = run_cli(*batch)  # done with the same settings and pictures: nothing is made again
    assert code == 0 and "2 skipped" in err, err


def test_chunk_options_in_a_batch_need_ray_and_chunks_that_can_be_made(tmp_path):
    code, _, err = run_cli("batch", PHOTOS[0], "--style", STYLES[0], "-o", str(tmp_path), *FAST, "--chunk-frames", "4")
    assert code == 2 and "add --ray" in err, err
    code, _, err = run_cli("batch", PHOTOS[0], "--style", STYLES[0], "-o", str(tmp_path), *FAST, "--ray", "auto",
                           "--chunk-frames", "2", "--chunk-overlap", "2")  # fmt: skip
    assert code == 2 and "more frames than it overlaps" in err, err
