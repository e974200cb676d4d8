"""A batch killed in the middle of a job goes on with that job where it stood, not from its first iteration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from style_studio.core.run.checkpoints import CheckpointStore
from tests.conftest import SAMPLES

# A batch in a subprocess, killed and run again.
pytestmark = pytest.mark.slow

PHOTO = str(SAMPLES / "content" / "chelsea.png")
STYLE = str(SAMPLES / "style" / "starry_night.jpg")


def test_a_killed_batch_job_resumes_from_its_checkpoint(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "STYLE_STUDIO_CACHE": str(tmp_path / "cache"), "STYLE_STUDIO_CHECKPOINT_SECONDS": "0"}
    command = [sys.executable, "-m", "style_studio", "batch", PHOTO, "--style", STYLE, "-o", str(out), "--size", "64",
               "--iterations", "60", "--scales", "1", "--weights", "untrained", "--progress", "json"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in process.stdout:
        record = json.loads(line)
        if record.get("step", 0) >= 10 and not record.get("parts"):
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=60)
    store = CheckpointStore(tmp_path / "cache" / "checkpoints")
    (checkpoint,) = store.unfinished()
    assert checkpoint.run_id.startswith("batch-") and checkpoint.position.step >= 9

    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    records = [json.loads(line) for line in again.stdout.splitlines()]
    steps = [r["step"] for r in records if "step" in r and not r["done"] and not r.get("parts")]
    assert steps[0] == checkpoint.position.step + 1 and steps[-1] == 60
    assert json.loads(again.stdout.splitlines()[-1])["summary"][0]["status"] == "done"
    assert store.unfinished() == []  # rendered: its checkpoint is gone
