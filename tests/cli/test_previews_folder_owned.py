"""``render --previews DIR``: a run owns its previews folder as it owns its output.

The folder is refused up front, with one line, when it holds another run's previews, is in use by another process,
or clashes with the run's own files; a killed run that goes on finds it as its checkpoint left it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

from tests.cli.test_cli import CONTENT, FAST, STYLE, run_cli
from tests.cli.test_previews_and_instant import previews_log


def snapshot(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def refused(code, err):
    """Whether the command was refused with status 2 and one line of error (beside what it said it loads)."""
    return code == 2 and err.count("style-studio: error:") == 1 and "starting from the beginning" not in err


def stopped_at(monkeypatch, step):
    """The next render in this process stops as Ctrl+C stops it once its record of ``step`` is shown (its
    checkpoint, saved after every iteration, is kept for --resume); returns a function that lets renders run again."""
    from style_studio.cli import terminal

    show = terminal.Reporter.show

    def interrupting(self, record):
        show(self, record)
        if record.step >= step and not record.done:
            raise KeyboardInterrupt

    monkeypatch.setenv("STYLE_STUDIO_CHECKPOINT_SECONDS", "0")
    monkeypatch.setattr(terminal.Reporter, "show", interrupting)
    return lambda: monkeypatch.setattr(terminal.Reporter, "show", show)


def test_resume_with_nothing_to_resume_leaves_another_runs_previews_alone(tmp_path):
    folder = tmp_path / "previews"
    keeping = ("render", CONTENT, STYLE, *FAST, "--previews", str(folder), "--preview-every", "0")
    assert run_cli(*keeping, "-o", str(tmp_path / "a.png"))[0] == 0
    before = snapshot(folder)
    # Another output, and the same one again (its run finished): neither has an unfinished run to go on with.
    for name in ("b.png", "a.png"):
        code, _, err = run_cli(*keeping, "-o", str(tmp_path / name), "--resume")
        assert refused(code, err) and f"{folder} holds the previews of another run" in err
        assert snapshot(folder) == before and not (tmp_path / "b.png").exists()


def test_going_on_with_a_run_takes_only_its_own_previews(tmp_path, monkeypatch):
    folder, other = tmp_path / "previews", tmp_path / "b.png"
    render = ("render", CONTENT, STYLE, *FAST, "--iterations", "6")
    keeping = (*render, "--previews", str(folder), "--preview-every", "0")
    go_on = stopped_at(monkeypatch, 2)
    assert run_cli(*keeping, "-o", str(tmp_path / "a.png"))[0] == 130
    assert run_cli(*render, "-o", str(other))[0] == 130  # b's run, its previews kept nowhere
    go_on()
    before = snapshot(folder)
    code, _, err = run_cli(*keeping, "-o", str(other), "--resume")  # b's run is unfinished, the previews are a's
    assert refused(code, err) and f"{folder} holds the previews of another run" in err
    assert snapshot(folder) == before and not other.exists()
    code, _, err = run_cli(*keeping, "-o", str(tmp_path / "a.png"), "--resume")  # a's own run: its previews grow
    assert code == 0 and "resuming" in err, err
    lines = previews_log(folder)
    assert [line["step"] for line in lines] == list(range(7))
    assert sorted(p.name for p in folder.iterdir()) == [*(line["file"] for line in lines), "previews.jsonl"]


@pytest.mark.parametrize("clash", ["is the output", "holds the output"])
def test_a_previews_folder_that_is_or_holds_the_output_is_refused_before_the_run(tmp_path, clash):
    folder = tmp_path / "frames.png"  # a name render would write a picture to
    if clash == "holds the output":
        folder.mkdir()
    out = folder if clash == "is the output" else folder / "out.png"
    code, _, err = run_cli(
        "render", CONTENT, STYLE, "-o", str(out), *FAST, "--previews", str(folder), "--preview-every", "0"
    )
    assert code == 2 and err.count("\n") == 1 and str(folder) in err and "output" in err, err
    assert not folder.exists() or list(folder.iterdir()) == []


def test_a_previews_folder_that_is_or_holds_an_input_is_refused_and_left_alone(tmp_path):
    folder = tmp_path / "timelapse"
    folder.mkdir()
    style = folder / "preview-0003.png"  # an earlier timelapse's frame, used as the style
    Image.open(STYLE).convert("RGB").resize((40, 30)).save(style)
    for previews in (folder, style):
        code, _, err = run_cli(
            "render",
            CONTENT,
            str(style),
            "-o",
            str(tmp_path / "out.png"),
            *FAST,
            "--previews",
            str(previews),
            "--resume",
        )
        assert code == 2 and err.count("\n") == 1 and "input" in err, err
    assert sorted(p.name for p in folder.iterdir()) == ["preview-0003.png"]


# Its run accepted and under way, it waits before keeping its first preview: the folder is still empty.
_ACCEPTED_THEN_WAITS = textwrap.dedent(
    """
    import sys, time
    from style_studio.core.jobs import preview_folder

    def keep(self, record):
        print("under way", flush=True)
        time.sleep(300)

    preview_folder.PreviewFolder.keep = keep
    from style_studio.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_a_second_render_into_a_previews_folder_in_use_is_refused(tmp_path):
    folder = tmp_path / "previews"
    keeping = ["render", CONTENT, STYLE, *FAST, "--previews", str(folder), "--progress", "none"]
    first = subprocess.Popen(
        [sys.executable, "-c", _ACCEPTED_THEN_WAITS, *keeping, "-o", str(tmp_path / "a.png")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout.readline().strip() == "under way"
        second = subprocess.run(
            [sys.executable, "-m", "style_studio", *keeping, "-o", str(tmp_path / "b.png")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert refused(second.returncode, second.stderr), second.stderr
        assert f"{folder} is in use by another Style Studio process" in second.stderr
        assert not (tmp_path / "b.png").exists() and (not folder.exists() or list(folder.iterdir()) == [])
        assert first.poll() is None  # untouched: still under way
    finally:
        first.kill()
        first.wait(timeout=60)
    # Once the first has gone (even killed), the folder is free again.
    assert run_cli(*keeping, "-o", str(tmp_path / "b.png"))[0] == 0


# Saves checkpoints up to step 4 only, keeps previews up to step 8, then dies with SIGKILL: the previews of steps 5
# to 8 (and their lines) describe pictures that the run going on from step 4 paints again.
_KILLED_PAST_ITS_CHECKPOINT = textwrap.dedent(
    """
    import os, signal, sys
    from style_studio.core.jobs import preview_folder
    from style_studio.core.run import checkpoints

    save = checkpoints.CheckpointStore.save

    def saving_to_step_4(self, checkpoint, inputs=None):
        if checkpoint.position.step <= 4:
            save(self, checkpoint, inputs)

    keep = preview_folder.PreviewFolder.keep

    def keeping_to_step_8(self, record):
        keep(self, record)
        if record.step == 8:
            os.kill(os.getpid(), signal.SIGKILL)

    checkpoints.CheckpointStore.save = saving_to_step_4
    preview_folder.PreviewFolder.keep = keeping_to_step_8
    from style_studio.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_a_killed_render_going_on_keeps_each_step_once_each_line_naming_its_picture(tmp_path, monkeypatch):
    monkeypatch.setenv("STYLE_STUDIO_CHECKPOINT_SECONDS", "0")
    folder, out = tmp_path / "previews", tmp_path / "out.png"
    args = ["render", CONTENT, STYLE, "-o", str(out), "--size", "48", "--iterations", "12", "--scales", "1",
            "--weights", "untrained", "--previews", str(folder), "--preview-every", "0",
            "--progress", "json"]  # fmt: skip
    killed = subprocess.run([sys.executable, "-c", _KILLED_PAST_ITS_CHECKPOINT, *args], capture_output=True,
                            text=True, timeout=300)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert [line["step"] for line in previews_log(folder)] == list(range(9))
    code, stdout, err = run_cli(*args, "--resume")
    assert code == 0 and "stopped at iteration 4" in err, err
    lines = previews_log(folder)
    assert [line["step"] for line in lines] == list(range(13))
    assert sorted(p.name for p in folder.iterdir()) == [*(line["file"] for line in lines), "previews.jsonl"]
    # Steps to 4 are the killed run's, later ones the run that went on: each line is the record of its picture.
    before = {r["step"]: r for r in map(json.loads, killed.stdout.splitlines())}
    after = {r["step"]: r for r in map(json.loads, stdout.splitlines()) if not r["done"]}
    assert sorted(after) == list(range(5, 13))
    for line in lines:
        record = (before if line["step"] <= 4 else after)[line["step"]]
        assert (line["total_loss"], line["elapsed"]) == (record["total_loss"], record["elapsed"])
    final = np.asarray(Image.open(out).convert("RGB"), dtype=float)
    last = np.asarray(Image.open(folder / lines[-1]["file"]).convert("RGB"), dtype=float)
    assert np.abs(final - last).max() <= 1


def test_a_previews_folder_reached_through_a_missing_folder_and_dots_is_the_folder_it_names(tmp_path, monkeypatch):
    """``--previews ghost/../P1`` was checked as a folder that did not exist, then written into ``P1`` (another run's
    previews, or a user's files), leaving a stray ``ghost`` behind."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "P1").mkdir()
    (tmp_path / "P1" / "notes.txt").write_text("mine")
    before = snapshot(tmp_path / "P1")
    code, _, err = run_cli("render", CONTENT, STYLE, *FAST, "-o", "w.png", "--previews", "ghost/../P1")
    assert refused(code, err) and "not previews" in err
    assert snapshot(tmp_path / "P1") == before and not (tmp_path / "ghost").exists()


def test_a_previews_folder_inside_the_output_s_name_is_refused_before_the_run(tmp_path, monkeypatch):
    """``-o zz.png --previews zz.png/sub`` ran the whole render into ``zz.png/sub/``, then failed on the output, and
    left a folder named zz.png that refused every later ``-o zz.png``."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("render", CONTENT, STYLE, *FAST, "-o", "zz.png", "--previews", "zz.png/sub")
    assert refused(code, err) and "would make the run's output zz.png a folder" in err
    assert not (tmp_path / "zz.png").exists()
