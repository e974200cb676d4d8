"""Run → Keep previews for a timelapse: each run keeps its previews in a folder of its own (issue #51, item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from PIL import Image

from style_studio.ui import file_commands, user_runs
from tests.cli.test_previews_and_instant import previews_log
from tests.ui.test_window import run_to_end


def test_each_run_keeps_its_previews_from_the_start_picture_in_a_folder_of_its_own(
    qtbot, window, tmp_path, monkeypatch
):
    chosen = tmp_path / "timelapses"
    chosen.mkdir()
    monkeypatch.setattr(file_commands.QFileDialog, "getExistingDirectory", lambda *args: str(chosen))
    window.commands.timelapse.trigger()
    assert window.commands.timelapse.isChecked() and window.store.timelapse_folder() == chosen
    run_to_end(qtbot, window)
    run_to_end(qtbot, window)
    folders = sorted(chosen.iterdir())
    assert len(folders) == 2 and all(f.name.startswith("chelsea-") for f in folders)
    for folder in folders:
        lines = [json.loads(line) for line in (folder / "previews.jsonl").read_text().splitlines()]
        assert lines[0]["step"] == 0 and lines[0]["file"] == "preview-0000.png" and lines[-1]["step"] == 6
        assert all((folder / line["file"]).is_file() for line in lines)
        with Image.open(folder / lines[-1]["file"]) as last:
            assert last.size == window.state.shown.result.size
    window.commands.timelapse.trigger()  # off: the next run keeps none
    assert window.store.timelapse_folder() is None
    run_to_end(qtbot, window)
    assert len(list(chosen.iterdir())) == 2


def test_cancelling_the_folder_dialog_leaves_it_off(window, monkeypatch):
    monkeypatch.setattr(file_commands.QFileDialog, "getExistingDirectory", lambda *args: "")
    window.commands.timelapse.trigger()
    assert not window.commands.timelapse.isChecked() and window.store.timelapse_folder() is None


# Holds the previews folder it is given as a window's or a render's run holds it while it runs.
_KEEPS_PREVIEWS_THERE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from style_studio.core.io.locks import folder_lock, held

    with held(folder_lock(Path(sys.argv[1]), "previews"), ""):
        print("held", flush=True)
        time.sleep(120)
    """
)


@pytest.mark.slow
def test_a_run_never_keeps_previews_in_a_folder_another_process_keeps_its_own_in(qtbot, window, tmp_path, monkeypatch):
    chosen = tmp_path / "timelapses"
    chosen.mkdir()
    monkeypatch.setattr(file_commands.QFileDialog, "getExistingDirectory", lambda *args: str(chosen))
    window.commands.timelapse.trigger()
    # Two windows started in the same second on the same photo make up the same folder name.
    monkeypatch.setattr(user_runs, "time", SimpleNamespace(strftime=lambda _format: "-same-second"))
    folder = chosen / "chelsea-same-second"
    other = subprocess.Popen(
        [sys.executable, "-c", _KEEPS_PREVIEWS_THERE, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout.readline().strip() == "held"
        outcome = run_to_end(qtbot, window)
        assert outcome.image is None and f"{folder} is in use by another Style Studio process" in window.banner.text()
        assert not folder.exists()
    finally:
        other.kill()
        other.wait(timeout=60)
    run_to_end(qtbot, window)  # the other gone, the folder is free
    assert len(previews_log(folder)) > 1
