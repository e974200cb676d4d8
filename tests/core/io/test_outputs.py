"""The one guarded writer: an output is never an input, stays in its folder, replaces only what its job made,
and is written atomically (mode and links kept, temporaries swept); deletes stay inside the folder they own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from style_studio.core.errors import OutputError, UnsafePathError
from style_studio.core.io.files import (
    FOREIGN_STALE_SECONDS,
    check_name,
    host_tag,
    remove_tree,
    sweep_temporaries,
    temporary_beside,
)
from style_studio.core.io.imageio import save_image
from style_studio.core.io.outputs import FrameFolder, Output
from style_studio.core.io.video_writer import write_video
from style_studio.core.jobs.render_queue import RenderQueue
from style_studio.core.run.checkpoints import CheckpointStore
from tests.conftest import ROOT


def frames(count: int, value: int = 90) -> list[np.ndarray]:
    return [np.full((8, 10, 3), value + n, np.uint8) for n in range(count)]


@pytest.fixture
def photo(tmp_path: Path) -> Path:
    path = tmp_path / "photo.png"
    Image.new("RGB", (8, 8), "orange").save(path)
    return path


# -- an output is never an input ----------------------------------------------------------------------------


def test_an_output_that_is_an_input_is_refused_by_name_link_dots_and_hard_link(tmp_path: Path, photo: Path) -> None:
    (tmp_path / "link.png").symlink_to(photo)
    os.link(photo, tmp_path / "hard.png")
    (tmp_path / "sub").mkdir()
    before = photo.read_bytes()
    for name in ["photo.png", "link.png", "sub/../photo.png", "hard.png"]:
        with pytest.raises(OutputError, match="is one of the job's inputs"):
            save_image(Image.new("RGB", (4, 4)), Output(tmp_path / name, (photo,)))
    assert photo.read_bytes() == before


def test_a_file_output_never_replaces_a_folder(tmp_path: Path) -> None:
    (tmp_path / "out.png").mkdir()
    (tmp_path / "out.png" / "mine.txt").write_text("the user's")
    with pytest.raises(OutputError, match="is a folder"):
        save_image(Image.new("RGB", (4, 4)), Output(tmp_path / "out.png"))
    assert (tmp_path / "out.png" / "mine.txt").read_text() == "the user's"


# -- containment, at the moment of writing ------------------------------------------------------------------


def test_a_link_planted_after_the_check_is_not_followed_out_of_the_folder(tmp_path: Path) -> None:
    folder, outside = tmp_path / "out", tmp_path / "victim.png"
    folder.mkdir()
    outside.write_bytes(b"precious")
    target = Output(folder / "result.png", within=folder)
    assert target.problems() == []  # what a batch checks before it starts
    (folder / "result.png").symlink_to(outside)  # planted while it runs
    with pytest.raises(OutputError, match="leads outside the output folder"):
        save_image(Image.new("RGB", (4, 4)), target)
    assert outside.read_bytes() == b"precious"


def test_a_link_swapped_in_between_writing_and_renaming_is_caught(tmp_path: Path) -> None:
    folder, outside = tmp_path / "out", tmp_path / "victim.bin"
    folder.mkdir()
    outside.write_bytes(b"precious")
    target = Output(folder / "result.bin", within=folder)

    def write_then_swap(out) -> None:
        out.write(b"new")
        (folder / "result.bin").symlink_to(outside)

    with pytest.raises(OutputError, match="leads outside"):
        target.write(write_then_swap)
    assert outside.read_bytes() == b"precious"
    assert [p.name for p in folder.iterdir()] == ["result.bin"]  # the link alone: no temporary left


# -- atomic, keeping mode and links; temporaries swept ---------------------------------------------------------


def test_a_video_keeps_a_linked_outputs_link_and_a_files_mode(tmp_path: Path) -> None:
    real = tmp_path / "real.mp4"
    write_video(Output(real), [(n / 12, f) for n, f in enumerate(frames(3))], 12.0)
    os.chmod(real, 0o600)
    (tmp_path / "link.mp4").symlink_to(real)
    write_video(Output(tmp_path / "link.mp4"), [(n / 12, f) for n, f in enumerate(frames(4))], 12.0)
    assert (tmp_path / "link.mp4").is_symlink()
    assert oct(real.stat().st_mode & 0o777) == oct(0o600)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.mp4", "real.mp4"]


def test_a_killed_writers_temporary_is_swept_by_the_next_write_and_others_are_left(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".out.mp4.ss-{dead.stdout.strip()}-0123abcd.part"
    stale.write_bytes(b"half a video")
    live = temporary_beside(tmp_path / "other.mp4")  # this process's: being written now
    live.write_bytes(b"in progress")
    users = tmp_path / ".notes.part"
    users.write_text("the user's")
    write_video(Output(tmp_path / "out.mp4"), [(0.0, frames(1)[0])], 12.0)
    assert not stale.exists() and live.exists() and users.exists()
    assert sweep_temporaries(tmp_path) == []


def test_a_temporary_another_host_is_writing_is_left_until_untouched_for_a_week(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = dead.stdout.strip()  # gone here; on another computer or container sharing the folder it may be writing
    other_host = "0badc0de" if host_tag() != "0badc0de" else "0ddba11e"
    elsewhere = tmp_path / f".out.png.ss-{other_host}-{pid}-0123abcd.part"
    elsewhere.write_bytes(b"another container's picture, being written")
    here = tmp_path / f".mine.png.ss-{host_tag()}-{pid}-0123abcd.part"
    here.write_bytes(b"this machine's killed writer's")
    assert temporary_beside(tmp_path / "x.png").name.startswith(f".x.png.ss-{host_tag()}-{os.getpid()}-")
    assert sweep_temporaries(tmp_path) == [here] and elsewhere.exists()
    week_ago = time.time() - FOREIGN_STALE_SECONDS - 60
    os.utime(elsewhere, (week_ago, week_ago))
    assert sweep_temporaries(tmp_path) == [elsewhere]


def test_a_video_killed_while_encoding_leaves_a_temporary_the_next_run_removes(tmp_path: Path) -> None:
    script = (
        "import sys, os, signal, numpy as np\n"
        "from style_studio.core.io.video_writer import write_video\n"
        "def frames():\n"
        "    for n in range(1000):\n"
        "        if n == 5: os.kill(os.getpid(), signal.SIGKILL)\n"
        "        yield n / 12, np.full((16, 16, 3), n % 255, np.uint8)\n"
        f"write_video({str(tmp_path / 'out.mp4')!r}, frames(), 12.0)\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=False, timeout=120)
    left = [p.name for p in tmp_path.iterdir()]
    assert "out.mp4" not in left and len(left) == 1, left  # the killed encode's temporary, nothing else
    write_video(Output(tmp_path / "out.mp4"), [(0.0, frames(1)[0])], 12.0)
    assert [p.name for p in tmp_path.iterdir()] == ["out.mp4"]


def test_two_processes_never_write_one_output_at_once(tmp_path: Path) -> None:
    target = Output(tmp_path / "out.png")
    with target.claim():
        holder = subprocess.run(
            [sys.executable, "-c", f"from style_studio.core.io.outputs import Output; from pathlib import Path\n"
             f"with Output(Path({str(target.path)!r})).claim(): pass"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert holder.returncode != 0 and "being written by another Style Studio process" in holder.stderr


# -- folders of frames -------------------------------------------------------------------------------------


def test_frames_are_never_written_into_a_folder_holding_the_users_files(tmp_path: Path) -> None:
    folder = tmp_path / "Videos"
    folder.mkdir(mode=0o755)
    (folder / "holiday.mov").write_bytes(b"the user's film")
    with pytest.raises(OutputError, match="1 file\\(s\\) this render did not write"):
        FrameFolder(Output(folder), "job1").write(frames(3))
    assert [p.name for p in folder.iterdir()] == ["holiday.mov"]
    assert oct(folder.stat().st_mode & 0o777) == oct(0o755)


def test_frames_go_into_a_new_or_empty_folder_and_over_the_same_jobs_frames_only(tmp_path: Path) -> None:
    new, empty = tmp_path / "new", tmp_path / "empty"
    empty.mkdir(mode=0o750)
    assert FrameFolder(Output(new), "job1").write(frames(4)) == 4
    assert FrameFolder(Output(empty), "job1").write(frames(2)) == 2
    assert oct(empty.stat().st_mode & 0o777) == oct(0o750)
    assert sorted(p.name for p in new.iterdir()) == [f"frame-00000{n}.png" for n in range(1, 5)]
    assert FrameFolder(Output(new), "job1").write(frames(2, value=10)) == 2  # the same job again, fewer frames
    assert sorted(p.name for p in new.iterdir()) == ["frame-000001.png", "frame-000002.png"]
    assert np.asarray(Image.open(new / "frame-000001.png"))[0, 0, 0] == 10
    with pytest.raises(OutputError, match="this render did not write"):
        FrameFolder(Output(new), "another job").write(frames(2))
    (new / "frame-000009.png").write_bytes(b"a user's file with a frame's name")
    with pytest.raises(OutputError, match="this render did not write"):
        FrameFolder(Output(new), "job1").write(frames(2))
    assert (new / "frame-000009.png").read_bytes() == b"a user's file with a frame's name"


def test_a_frame_folder_holding_an_input_is_refused(tmp_path: Path, photo: Path) -> None:
    with pytest.raises(OutputError, match="holds the job's input photo.png"):
        FrameFolder(Output(tmp_path, (photo,)), "job1").write(frames(1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["photo.png"]


# -- names that become paths, and recursive deletes -------------------------------------------------------------


@pytest.mark.parametrize("name", ["x/../../../../victim", "..", ".", "", "/etc", "a\0b", "x\\..\\y", ".hidden"])
def test_a_name_that_could_leave_its_folder_is_refused(name: str) -> None:
    with pytest.raises(UnsafePathError):
        check_name(name)


def test_a_recursive_delete_stays_inside_the_folder_it_owns(tmp_path: Path) -> None:
    owner, victim = tmp_path / "cache", tmp_path / "victim"
    (owner / "mine").mkdir(parents=True)
    victim.mkdir()
    (victim / "precious.txt").write_text("keep")
    (owner / "link").symlink_to(victim)
    for path in [owner / ".." / "victim", owner / "link", owner, victim]:
        with pytest.raises(UnsafePathError):
            remove_tree(path, owner)
    remove_tree(owner / "mine", owner)
    assert (victim / "precious.txt").read_text() == "keep" and not (owner / "mine").exists()


def test_a_hostile_queue_id_is_set_aside_and_nothing_outside_the_cache_is_removed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep")
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    item = {
        "id": "x/../../../../" + str(victim).lstrip("/"), "content": str(tmp_path / "a.png"),
        "styles": [str(tmp_path / "b.png")], "settings": {}, "output": str(tmp_path / "out.png"),
    }  # fmt: skip
    (data / "queue.json").write_text(json.dumps({"format": "style-studio-queue", "version": 1, "items": [item]}))
    queue = RenderQueue(data)
    try:
        assert len(queue) == 0 and "could not be read" in queue.notices[0]
    finally:
        queue.close()
    store = CheckpointStore(tmp_path / "cache" / "checkpoints")
    with pytest.raises(UnsafePathError):
        store.discard(item["id"])
    assert (victim / "precious.txt").read_text() == "keep"
    assert list(data.glob("queue.json.unreadable-*"))
