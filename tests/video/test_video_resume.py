"""A video render killed or stopped keeps its finished frames and goes on from the next with --resume."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from style_studio.cli import main
from style_studio.core.io.files import cache_folder
from tests.clips import camera_pan, textured, write_clip

# Renders in subprocesses, killed and resumed.
pytestmark = pytest.mark.slow

SETTINGS = ["--size", "64", "--iterations", "10", "--frame-iterations", "8", "--weights", "untrained"]


@pytest.fixture(autouse=True)
def _tiny(tiny_network: None) -> None:
    """The tiny test network for "untrained" (subprocesses inherit it)."""


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    style = tmp_path / "style.png"
    Image.fromarray(textured(64, 64, seed=5)).save(style)
    return write_clip(tmp_path / "pan.mp4", camera_pan(6), sound="aac"), style


def command(clip: Path, style: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "style_studio", "video", str(clip), str(style), "-o", str(out), *SETTINGS,
            "--progress", "json", *extra]  # fmt: skip


def frames(folder: Path) -> list[np.ndarray]:
    return [np.asarray(Image.open(p)) for p in sorted(folder.iterdir())]


def kept_frames() -> list[Path]:
    return sorted((cache_folder() / "videos").glob("*/frame-*.png"))


def stop_at(process: subprocess.Popen[str], frame: int, iteration: int, how: signal.Signals) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        record = json.loads(line)
        if record["frame"] == frame and record.get("iteration") == iteration and not record["done"]:
            process.send_signal(how)
            return
    raise AssertionError("the render ended before it could be stopped")


def test_a_killed_render_resumes_from_the_next_frame_and_gives_the_same_video(tmp_path: Path, inputs) -> None:
    clip, style = inputs
    assert main(["video", str(clip), str(style), "-o", str(tmp_path / "whole"), *SETTINGS],
                stdout=io.StringIO(), stderr=io.StringIO()) == 0  # fmt: skip
    out = tmp_path / "resumed"
    process = subprocess.Popen(command(clip, style, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop_at(process, frame=4, iteration=3, how=signal.SIGKILL)  # no handler runs: only what is on disk survives
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert not out.exists()
    assert len(kept_frames()) == 3

    resumed = subprocess.run(command(clip, style, out, "--resume"), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "going on from frame 4 (3 frames kept)" in resumed.stderr
    records = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert sorted({r["frame"] for r in records}) == [4, 5, 6]
    whole, again = frames(tmp_path / "whole"), frames(out)
    assert len(whole) == len(again) == 6
    for number, (a, b) in enumerate(zip(whole, again, strict=True), start=1):
        assert np.array_equal(a, b), f"frame {number} differs"
    assert kept_frames() == []


def test_ctrl_c_stops_after_the_frame_keeps_it_and_resume_finishes(tmp_path: Path, inputs) -> None:
    clip, style = inputs
    out = tmp_path / "styled.mp4"
    process = subprocess.Popen(command(clip, style, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop_at(process, frame=3, iteration=2, how=signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "stopping after this frame" in stderr
    assert "run the same command with --resume to go on" in stderr
    assert not out.exists()
    assert len(kept_frames()) == 3  # the frame being made when Ctrl+C came was finished and kept
    assert all(json.loads(line)["frame"] <= 3 for line in stdout.splitlines())

    resumed = subprocess.run(command(clip, style, out, "--resume"), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "going on from frame 4" in resumed.stderr
    assert out.is_file() and kept_frames() == []


def test_without_resume_kept_frames_are_named_not_lost_and_restart_starts_again(tmp_path: Path, inputs) -> None:
    clip, style = inputs
    out = tmp_path / "styled.mp4"
    process = subprocess.Popen(command(clip, style, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop_at(process, frame=3, iteration=2, how=signal.SIGKILL)
    process.wait(timeout=60)
    kept = kept_frames()
    assert len(kept) == 2
    again = subprocess.run(command(clip, style, out), capture_output=True, text=True, timeout=300, env=os.environ)
    assert again.returncode == 2, again.stderr
    assert "2 frame(s) from an earlier render" in again.stderr and "--resume" in again.stderr
    assert "--restart" in again.stderr and kept_frames() == kept and not out.exists()
    restarted = subprocess.run(command(clip, style, out, "--restart"), capture_output=True, text=True, timeout=300)
    assert restarted.returncode == 0, restarted.stderr
    assert sorted({json.loads(line)["frame"] for line in restarted.stdout.splitlines()}) == [1, 2, 3, 4, 5, 6]
