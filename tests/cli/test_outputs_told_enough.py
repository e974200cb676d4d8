"""The guard of an output is told enough to keep its promises (issue #50): a name Style Studio made up never
replaces a user's file, a read-only file is not replaced, a trailing '/' means a folder, and a folder output
through a link or a folder where a video file is due is refused before the first frame."""

from __future__ import annotations

import dataclasses
import shutil
import stat
from pathlib import Path

import pytest

from style_studio.core import Job, Output, OutputError, Settings, output_key
from style_studio.core.io import files
from style_studio.core.jobs.batch import check_jobs, free_generated_names, jobs_from_arguments
from style_studio.core.jobs.job import VideoOptions
from style_studio.core.jobs.render_queue import RenderQueue, item_for
from style_studio.core.settings import DEFAULTS
from tests.cli.test_cli import run_cli as run_cli_text
from tests.clips import camera_pan, write_clip
from tests.conftest import SAMPLES

FAST = ["--size", "32", "--iterations", "2", "--scales", "1", "--weights", "untrained"]
CONTENT = SAMPLES / "content" / "chelsea.png"
STYLE = SAMPLES / "style" / "starry_night.jpg"


def run_cli(*args: str | Path) -> tuple[int, str, str]:
    return run_cli_text(*(str(a) for a in args))


@pytest.fixture
def pictures(tmp_path: Path) -> tuple[Path, Path]:
    shutil.copy(CONTENT, tmp_path / "a.png")
    shutil.copy(STYLE, tmp_path / "b.jpg")
    return tmp_path / "a.png", tmp_path / "b.jpg"


# 2. A batch's generated name never replaces a user's file ----------------------------------------------------------


def test_a_batch_writes_beside_a_users_file_of_the_name_it_chose_and_says_so(
    tmp_path: Path, pictures: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "a-b.png"
    mine.write_bytes(b"the user's own a-b.png")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("batch", "a.png", "--style", "b.jpg", "-o", ".", *FAST)
    assert code == 0, err
    assert mine.read_bytes() == b"the user's own a-b.png"
    assert "a-b.png is a file Style Studio did not make; writing a-b-2.png instead" in err
    assert output_key(tmp_path / "a-b-2.png") is not None
    code, _, err = run_cli("batch", "a.png", "--style", "b.jpg", "-o", ".", *FAST)  # again: the same name, done
    assert code == 0 and "skipped" in err and not (tmp_path / "a-b-3.png").exists(), err


def test_a_name_made_up_replaces_a_picture_of_ours_but_a_users_file_that_appears_is_refused(
    tmp_path: Path, pictures: tuple[Path, Path]
) -> None:
    settings = dataclasses.replace(DEFAULTS, size=32)
    (job,) = jobs_from_arguments([pictures[0]], [pictures[1]], tmp_path, settings)
    assert job.generated_name
    (job,), renamed = free_generated_names([job])
    assert job.output == tmp_path / "a-b.png" and not renamed
    (tmp_path / "a-b.png").write_bytes(b"appeared while the batch ran")
    with pytest.raises(OutputError, match="was not made by Style Studio; it is not replaced"):
        job.target().write_bytes(b"ours")
    assert (tmp_path / "a-b.png").read_bytes() == b"appeared while the batch ran"
    named = dataclasses.replace(job, generated_name=False)  # a name the user gave is theirs to replace
    named.target().write_bytes(b"ours")
    assert (tmp_path / "a-b.png").read_bytes() == b"ours"


def test_two_jobs_whose_made_up_names_meet_get_two_names(tmp_path: Path, pictures: tuple[Path, Path]) -> None:
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(pictures[0], other / "a.png")
    jobs = jobs_from_arguments([pictures[0], other / "a.png"], [pictures[1]], tmp_path / "out", DEFAULTS)
    jobs, renamed = free_generated_names(jobs)
    assert [j.output.name for j in jobs] == ["a-b.png", "a-b-2.png"] and "another job's" in renamed[0]
    check_jobs(jobs, tmp_path / "out")


def test_the_queue_names_its_outputs_beside_files_and_queued_jobs(tmp_path: Path, pictures: tuple[Path, Path]) -> None:
    queue = RenderQueue(tmp_path / "data")
    try:
        (tmp_path / "a-b.png").write_bytes(b"user")
        first = item_for(pictures[0], [pictures[1]], DEFAULTS, tmp_path, queue)
        queue.add([first])
        second = item_for(pictures[0], [pictures[1]], DEFAULTS, tmp_path, queue, mask=pictures[1])
        assert (first.job.output.name, second.job.output.name) == ("a-b-2.png", "a-b-3.png")
        queue.add([second])
    finally:
        queue.close()
    again = RenderQueue(tmp_path / "data")
    try:  # what the queue knows of its jobs' names and inputs comes back with it
        assert [i.job.generated_name for i in again] == [True, True] and again.items[1].job.mask == pictures[1]
    finally:
        again.close()


# 3. A read-only file is not replaced ----------------------------------------------------------------------------


def test_a_read_only_output_is_refused_and_kept(tmp_path: Path, pictures: tuple[Path, Path]) -> None:
    keep = tmp_path / "keep.png"
    keep.write_bytes(b"read-only on purpose")
    keep.chmod(0o444)
    code, _, err = run_cli("render", *pictures, "-o", keep, *FAST)
    assert code == 2 and "keep.png is read-only; it is not replaced" in err, err
    assert keep.read_bytes() == b"read-only on purpose" and stat.S_IMODE(keep.stat().st_mode) == 0o444
    alias = tmp_path / "alias.png"
    alias.symlink_to(keep)  # through a link too: the file it leads to is what would be replaced
    with pytest.raises(OutputError, match="read-only"):
        Output(alias).write_bytes(b"x")
    keep.chmod(0o644)
    assert run_cli("render", *pictures, "-o", keep, *FAST)[0] == 0 and output_key(keep) is not None


# 8. A trailing separator names a folder --------------------------------------------------------------------------


def test_a_render_to_a_name_ending_in_a_slash_is_refused_and_writes_nothing(
    tmp_path: Path, pictures: tuple[Path, Path]
) -> None:
    code, _, err = run_cli("render", *pictures, "-o", f"{tmp_path}/new.png/", *FAST)
    assert code == 2 and "so it names a folder" in err and "using untrained" not in err, err
    assert not (tmp_path / "new.png").exists()


def test_a_video_to_a_folder_name_with_a_videos_ending_is_refused(tmp_path: Path, tiny_network: None) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(2))
    code, _, err = run_cli("video", clip, STYLE, "-o", f"{tmp_path}/new.gif/", *FAST)
    assert code == 2 and "names a folder of frames, but its name ends in '.gif'" in err, err
    assert not (tmp_path / "new.gif").exists()


def test_a_jobs_file_output_ending_in_a_slash_is_refused(tmp_path: Path, pictures: tuple[Path, Path]) -> None:
    jobs = tmp_path / "jobs.toml"
    jobs.write_text('[[jobs]]\ncontent = "a.png"\nstyles = ["b.jpg"]\noutput = "d.png/"\n')
    code, _, err = run_cli("batch", "--jobs", jobs, "-o", tmp_path / "out", *FAST)
    assert code == 2 and "'d.png/' ends with a separator, so it names a folder" in err, err


# 5. Refused before the first frame ----------------------------------------------------------------------------------


def test_a_folder_of_frames_through_a_link_is_refused_before_any_frame(tmp_path: Path, tiny_network: None) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(2))
    (tmp_path / "real").mkdir()
    (tmp_path / "linkdir").symlink_to(tmp_path / "real")
    code, _, err = run_cli("video", clip, STYLE, "-o", tmp_path / "linkdir", *FAST)
    assert code == 2 and "linkdir is a link (to " in err and "using untrained" not in err, err
    assert list((tmp_path / "real").iterdir()) == []


def test_a_batch_video_whose_output_is_an_existing_folder_is_refused_up_front(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "d.mp4", camera_pan(2))
    (tmp_path / "out" / "d.gif").mkdir(parents=True)
    job = Job("1", clip, (STYLE,), DEFAULTS, tmp_path / "out" / "d.gif", video=VideoOptions())
    with pytest.raises(Exception, match="d.gif is a folder; give a file name"):
        check_jobs([job], tmp_path / "out")


# Also reviewed: two outputs whose names differ in case only, on a disk that ignores case ---------------------------


def test_this_disk_tells_case_apart(tmp_path: Path) -> None:
    (tmp_path / "Photos").mkdir()
    assert not files.ignores_case(str(tmp_path / "Photos" / "sub"))  # Linux: ext4, tmpfs
    assert files.path_key(tmp_path / "A.png") != files.path_key(tmp_path / "a.png")


def test_on_a_disk_that_ignores_case_two_names_in_two_cases_are_one_output(
    tmp_path: Path, pictures: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "ignores_case", lambda folder: True)  # as macOS's and Windows' disks do
    jobs = [
        Job("1", pictures[0], (pictures[1],), Settings(), tmp_path / "out" / "A.png", within=tmp_path / "out"),
        Job("2", pictures[0], (pictures[1],), Settings(), tmp_path / "out" / "a.png", within=tmp_path / "out"),
    ]
    with pytest.raises(Exception, match="writes a.png, as job 1 does"):
        check_jobs(jobs, tmp_path / "out")
    # The lock an output is claimed by is named by the same key: two processes cannot write both at once.
    assert files.path_key(tmp_path / "A.png") == files.path_key(tmp_path / "a.png")
