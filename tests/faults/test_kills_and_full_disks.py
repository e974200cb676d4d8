"""Files survive the faults that happen: a kill in the middle of a checkpoint, queue or output write; a full disk."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap

import pytest
from PIL import Image

from style_studio.core.jobs.render_queue import RenderQueue
from style_studio.core.run.checkpoints import CheckpointStore
from tests.conftest import SAMPLES

# Saves step 5, then saves step 5 again (as a Stop in the middle of a tiled
# iteration does) and is killed with SIGKILL while torch writes that state file.
_SAVE_TWICE_AND_DIE = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import torch
    from style_studio.core.run.checkpoints import Checkpoint, CheckpointStore, Position
    from style_studio.core.settings import Settings

    store = CheckpointStore(Path(sys.argv[1]))
    def checkpoint(value):
        image = torch.full((1, 3, 8, 8), value)
        return Checkpoint("run", Settings(size=64), "c", ("s",), ("c.png", "s.png"), Position(0, 5, 5, 1.0),
                          {"image": image, "lowest": image}, 1.0)
    store.save(checkpoint(0.25))
    real_save = torch.save
    def dying_save(state, out):
        out.write(b"PK\\x03\\x04 half a zip")
        out.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    torch.save = dying_save
    store.save(checkpoint(0.75))
    """
)


@pytest.mark.slow
def test_a_kill_while_the_same_step_is_saved_again_leaves_the_first_save_usable(tmp_path):
    root = tmp_path / "checkpoints"
    died = subprocess.run([sys.executable, "-c", _SAVE_TWICE_AND_DIE, str(root)], capture_output=True, timeout=120)
    assert died.returncode == -signal.SIGKILL, died.stderr
    checkpoint = CheckpointStore(root).load("run")  # not "damaged": run.json's state file is still there
    assert checkpoint.position.step == 5
    assert float(checkpoint.image.mean()) == 0.25


def _small_inputs(folder):
    folder.mkdir()
    content, style = folder / "photo.png", folder / "style.png"
    with Image.open(SAMPLES / "content" / "chelsea.png") as image:
        image.convert("RGB").resize((96, 64)).save(content)
    with Image.open(SAMPLES / "style" / "starry_night.jpg") as image:
        image.convert("RGB").resize((64, 52)).save(style)
    return content, style


def _limit_file_size(limit):
    def apply():  # in the child, before it runs Python (which ignores SIGXFSZ: writes past it fail with EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow
def test_a_full_disk_during_checkpoints_is_said_once_and_the_render_still_finishes(tmp_path):
    content, style = _small_inputs(tmp_path / "in")
    out = tmp_path / "out.png"
    env = {**os.environ, "STYLE_STUDIO_CHECKPOINT_SECONDS": "0", "STYLE_STUDIO_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "style_studio", "render", str(content), str(style), "-o", str(out),
               "--size", "96", "--iterations", "6", "--weights", "untrained", "--progress", "json"]  # fmt: skip
    # The inputs' copies and the output (~20 KB each) fit; the state file (two 96x64 float images, ~150 KB) does not.
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=300, preexec_fn=_limit_file_size(100_000)
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("could not save a checkpoint") == 1, done.stderr
    assert "Traceback" not in done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[-1]["stop_reason"] == "finished"
    with Image.open(out) as picture:
        assert picture.size == (96, 64)
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".part")]


# Writes a queue with one job, then adds a second and is killed with SIGKILL half-way through writing the file.
_QUEUE_WRITE_DIES = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from style_studio.core.jobs import render_queue
    from style_studio.core.jobs.job import Job
    from style_studio.core.jobs.render_queue import QueueItem, RenderQueue
    from style_studio.core.settings import Settings

    queue = RenderQueue(Path(sys.argv[1]))
    queue.add([QueueItem(Job("first", Path("a.png"), (Path("s.jpg"),), Settings(size=64), Path("a-out.png")))])
    real = render_queue.write_atomically
    def dying(path, write):
        def half(out):
            out.write(b'{"format": "style-studio-queue", "items": [')
            out.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        real(path, half)
    render_queue.write_atomically = dying
    queue.add([QueueItem(Job("second", Path("b.png"), (Path("s.jpg"),), Settings(size=64), Path("b-out.png")))])
    """
)


def test_a_kill_while_the_queue_is_written_leaves_the_queue_as_it_was(tmp_path):
    died = subprocess.run([sys.executable, "-c", _QUEUE_WRITE_DIES, str(tmp_path)], capture_output=True, timeout=120)
    assert died.returncode == -signal.SIGKILL, died.stderr
    queue = RenderQueue(tmp_path)
    assert [item.id for item in queue] == ["first"] and queue.notices == []


# Exports a picture, then exports over it and is killed half-way through the second write.
_EXPORT_DIES = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from PIL import Image
    from style_studio.core.io import imageio

    path = Path(sys.argv[1])
    imageio.save_image(Image.new("RGB", (64, 48), (200, 30, 30)), path, None)
    real_save = Image.Image.save
    def dying_save(self, out, *args, **kwargs):
        out.write(b"\\x89PNG half a picture")
        out.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    Image.Image.save = dying_save
    imageio.save_image(Image.new("RGB", (64, 48), (30, 30, 200)), path, None)
    """
)


def test_a_kill_while_an_output_is_written_leaves_the_old_picture_whole(tmp_path):
    path = tmp_path / "result.png"
    died = subprocess.run([sys.executable, "-c", _EXPORT_DIES, str(path)], capture_output=True, timeout=120)
    assert died.returncode == -signal.SIGKILL, died.stderr
    with Image.open(path) as picture:
        assert picture.size == (64, 48) and picture.convert("RGB").getpixel((0, 0)) == (200, 30, 30)
