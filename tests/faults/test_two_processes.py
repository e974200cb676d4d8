"""Two processes at once: a second batch, render or window is told what is busy, and harms nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from style_studio.core.jobs.render_queue import RenderQueue
from style_studio.core.run.checkpoints import CheckpointStore
from tests.cli.test_cli import run_cli
from tests.conftest import SAMPLES

# Two real processes at once.
pytestmark = pytest.mark.slow

PHOTO = str(SAMPLES / "content" / "chelsea.png")
STYLE = str(SAMPLES / "style" / "starry_night.jpg")
SLOW = ["--size", "64", "--iterations", "400", "--scales", "1", "--weights", "untrained", "--progress", "json"]


def started(command, env, until):
    """A style-studio process, once its JSON progress shows ``until(record)``."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in process.stdout:
        if until(json.loads(line)):
            return process
    raise AssertionError("the first process ended before it got under way")


def stop(process):
    process.kill()
    process.wait(timeout=60)


@pytest.fixture
def env(tmp_path):
    # The same cache folder for both processes, as for one user; this test's process uses it too.
    return {**os.environ, "STYLE_STUDIO_CACHE": str(tmp_path / "cache"), "STYLE_STUDIO_CHECKPOINT_SECONDS": "0"}


def test_a_second_batch_into_the_same_folder_is_refused_and_the_first_goes_on(tmp_path, env):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "style_studio", "batch", PHOTO, "--style", STYLE, "-o", str(out), *SLOW]
    first = started(command, env, lambda record: record.get("iteration", 0) >= 2)
    try:
        second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert second.returncode == 2
        assert f"{out} is the output folder of another style-studio batch" in second.stderr
        assert first.poll() is None  # untouched: still rendering
    finally:
        stop(first)
    # Once the first has gone (even killed), the folder is free again.
    code, _, err = run_cli("batch", PHOTO, "--style", STYLE, "-o", str(out), "--size", "32", "--iterations", "1",
                           "--weights", "untrained", "--progress", "none")  # fmt: skip
    assert code == 0, err


def test_a_second_render_to_the_same_output_is_refused_and_the_first_ones_checkpoint_stays(tmp_path, env):
    out = tmp_path / "print.png"
    command = [sys.executable, "-m", "style_studio", "render", PHOTO, STYLE, "-o", str(out), *SLOW]
    first = started(command, env, lambda record: record["step"] >= 3)
    try:
        second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert second.returncode == 2
        assert f"{out} is being rendered by another style-studio process" in second.stderr
        # Another process (a window) does not offer the live run as unfinished, nor discards it.
        store = CheckpointStore(tmp_path / "cache" / "checkpoints")
        assert store.unfinished() == []
        (folder,) = [p for p in store.root.iterdir() if p.is_dir()]
        store.discard(folder.name)
        assert folder.exists()
    finally:
        stop(first)
    (checkpoint,) = store.unfinished()  # killed: now it is unfinished, for anyone to resume
    assert checkpoint.position.step >= 3


_HOLD_THE_QUEUE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from style_studio.core.jobs.render_queue import RenderQueue
    queue = RenderQueue(Path(sys.argv[1]))
    print("open", flush=True)
    time.sleep(120)
    """
)


def test_a_second_window_is_told_the_queue_is_open_elsewhere_and_writes_nothing(make_window, tmp_path):
    data = tmp_path / "data"  # the tests' STYLE_STUDIO_DATA
    first = subprocess.Popen([sys.executable, "-c", _HOLD_THE_QUEUE, str(data)], stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "open"
        window = make_window()
        assert "The render queue is open in another Style Studio window" in window.banner.text()
        assert not window.intake.add(tmp_path / "out")
        assert "open in another Style Studio window" in window.banner.text()
        assert not (data / "queue.json").exists()
    finally:
        stop(first)
    assert RenderQueue(data).owned  # the first one gone, the queue is free
