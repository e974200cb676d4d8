"""A command-line render killed with SIGKILL mid-run resumes from its last checkpoint and finishes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from PIL import Image

from style_studio.core.io.imageio import read_metadata
from style_studio.core.run.checkpoints import CheckpointStore
from style_studio.core.settings import loads
from tests.conftest import SAMPLES

# Command-line renders in subprocesses, killed and resumed.
pytestmark = pytest.mark.slow

CONTENT = SAMPLES / "content" / "chelsea.png"
STYLE = SAMPLES / "style" / "starry_night.jpg"


def command(out, *extra):
    return [
        sys.executable, "-m", "style_studio", "render", str(CONTENT), str(STYLE), "-o", str(out),
        "--size", "96", "--iterations", "30", "--weights", "untrained", "--progress", "json", *extra,
    ]  # fmt: skip


def test_a_killed_render_resumes_to_the_end_and_leaves_nothing_behind(tmp_path):
    out = tmp_path / "print.png"
    env = {**os.environ, "STYLE_STUDIO_CHECKPOINT_SECONDS": "0", "STYLE_STUDIO_CACHE": str(tmp_path / "cache")}
    store = CheckpointStore(tmp_path / "cache" / "checkpoints")
    process = subprocess.Popen(command(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    killed_after = 0
    for line in process.stdout:
        record = json.loads(line)
        if not record["parts"] and record["step"] >= 8:
            killed_after = record["step"]
            process.send_signal(signal.SIGKILL)  # no handler runs: only what is on disk survives
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL and killed_after >= 8
    assert not out.exists()
    (checkpoint,) = store.unfinished()
    # Saved after every iteration; the kill may land during the next save, never inside a file that is read.
    assert killed_after - 1 <= checkpoint.position.step <= killed_after + 1

    resumed = subprocess.run(command(out, "--resume"), capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming chelsea.png (96 px), stopped at iteration" in resumed.stderr
    records = [json.loads(line) for line in resumed.stdout.splitlines()]
    steps = [r["step"] for r in records if not r["done"] and not r["parts"]]
    assert steps == list(range(checkpoint.position.step + 1, 31))
    assert records[-1]["stop_reason"] == "finished"
    with Image.open(out) as picture:
        assert picture.size == (96, 64)
    assert loads(read_metadata(out)).iterations == 30
    assert store.unfinished() == []
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".part")]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_a_stopped_render_saves_where_it_stands_says_how_to_go_on_and_resumes(tmp_path, stop):
    # Ctrl+C, and kill's default signal (what job schedulers and logouts send too),
    # stop the run after its step with a checkpoint, however long since the last one.
    out = tmp_path / "print.png"
    env = {**os.environ, "STYLE_STUDIO_CHECKPOINT_SECONDS": "3600", "STYLE_STUDIO_CACHE": str(tmp_path / "cache")}
    store = CheckpointStore(tmp_path / "cache" / "checkpoints")
    process = subprocess.Popen(command(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in process.stdout:
        if json.loads(line)["step"] >= 5:
            process.send_signal(stop)
            break
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "stopping after this step" in err
    assert "interrupted; nothing written. Run the same command with --resume to go on" in err
    assert not out.exists()
    (checkpoint,) = store.unfinished()  # saved on the way out: the interval alone would have saved none
    assert checkpoint.position.step >= 5
    resumed = subprocess.run(command(out, "--resume"), capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"stopped at iteration {checkpoint.position.step}" in resumed.stderr
    assert out.exists()


def test_resuming_after_the_settings_changed_says_what_changed(tmp_path):
    out = tmp_path / "print.png"
    env = {**os.environ, "STYLE_STUDIO_CHECKPOINT_SECONDS": "0", "STYLE_STUDIO_CACHE": str(tmp_path / "cache")}
    process = subprocess.Popen(command(out), stdout=subprocess.PIPE, text=True, env=env)
    for line in process.stdout:
        if json.loads(line)["step"] >= 3:
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    refused = subprocess.run(
        command(out, "--resume", "--style-weight", "9"), capture_output=True, text=True, env=env, timeout=120
    )
    assert refused.returncode == 2
    assert "cannot be resumed: style_weight was 3.0, now 9.0" in refused.stderr
    assert not out.exists()
