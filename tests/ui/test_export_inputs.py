"""The window's Export names every file its picture was made from (issue #50, item 1): the regions' mask, and for
a history entry the photo and styles it was made from, kept with the entry across a restart."""

from __future__ import annotations

from style_studio.ui.pictures import InputImage
from tests.ui.test_window import run_to_end


def export_error(qtbot, window, target, entry=None) -> str:
    """What exporting the shown picture (or ``entry``) to ``target`` said went wrong ("" when it was written)."""
    with qtbot.waitSignal(window.documents.exportFinished, timeout=30_000) as blocker:
        assert window.files.export_to(target, entry=entry)
    return blocker.args[1]


def open_pictures(window, photo, style) -> None:
    window.inputs.set_content(InputImage.from_file(photo))
    for row in list(window.inputs.style_rows):
        window.inputs.remove_style(row)
    window.inputs.add_style(InputImage.from_file(style))


def test_export_never_replaces_the_regions_mask(qtbot, window, files):
    photo, _, style, mask = files
    open_pictures(window, photo, style)
    assert window.painting.load_mask(mask)
    run_to_end(qtbot, window)
    before = mask.read_bytes()
    assert "is one of the job's inputs (mask.png)" in export_error(qtbot, window, mask)
    assert mask.read_bytes() == before
    assert window.history.entries[-1].inputs == (photo, style, mask)  # the run's inputs, kept with its entry


def test_an_earlier_entry_is_never_exported_over_the_photo_it_was_made_from(qtbot, make_window, files):
    photo, other, style, _ = files
    window = make_window()
    open_pictures(window, photo, style)
    run_to_end(qtbot, window)
    made_from_photo = window.history.entries[-1]
    window.kept.wait()
    open_pictures(window, other, style)  # another photo now: the entry's own is no longer shown
    before = photo.read_bytes()
    assert "is one of the job's inputs (photo.png)" in export_error(qtbot, window, photo, made_from_photo)
    assert photo.read_bytes() == before
    window.close()

    again = make_window(settings=None)  # after a restart, the entry still knows its files
    (kept,) = again.history.entries
    assert kept.inputs == (photo, style)
    assert "is one of the job's inputs (photo.png)" in export_error(qtbot, again, photo, kept)
    assert photo.read_bytes() == before
    assert export_error(qtbot, again, photo.with_name("styled.png"), kept) == ""


def test_choosing_the_photo_in_the_export_dialog_is_refused_in_words_before_any_question(
    qtbot, window, files, monkeypatch
):
    from style_studio.ui import documents

    photo, _, style, _ = files
    open_pictures(window, photo, style)
    run_to_end(qtbot, window)
    asked, errors = [], []
    monkeypatch.setattr(documents.QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(photo), ""))
    monkeypatch.setattr(documents.QMessageBox, "question", lambda *args: asked.append(args[2]))
    window.documents.error.connect(errors.append)
    before = photo.read_bytes()
    window.commands.export.trigger()
    assert errors == ["photo.png is your photo: export the picture under another name."]
    assert asked == []  # no "replace photo.png?" first
    assert not window.documents.exporting and photo.read_bytes() == before
    # Another existing file is asked about, once, by us.
    other = photo.with_name("old-export.png")
    other.write_bytes(b"mine")
    monkeypatch.setattr(documents.QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(other), ""))
    window.commands.export.trigger()
    assert asked == ["old-export.png already exists. Replace it?"] and other.read_bytes() == b"mine"


def test_export_during_a_run_stops_it_and_writes_the_picture_so_far(qtbot, window, files, monkeypatch, tmp_path):
    """Ctrl+S while a run paints exports what is being painted, not the last entry of the history."""
    import dataclasses

    import numpy as np
    from PIL import Image

    from style_studio.core import CANCELLED
    from style_studio.ui import documents
    from tests.ui.conftest import FAST

    photo, _, style, _ = files
    open_pictures(window, photo, style)
    run_to_end(qtbot, window)
    earlier = window.state.shown  # the history's last entry, which Ctrl+S must not write
    window.controls.set_settings(dataclasses.replace(FAST, iterations=100_000, seed=7))
    target = tmp_path / "so-far.png"
    monkeypatch.setattr(documents.QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(target), ""))
    steps = []
    window.controller.progressed.connect(lambda record: steps.append(record.step))
    window.commands.start.trigger()
    qtbot.waitUntil(lambda: len(steps) >= 3, timeout=30_000)
    with qtbot.waitSignal(window.documents.exportFinished, timeout=60_000) as blocker:
        window.commands.export.trigger()
    assert blocker.args[1] in ("", None), blocker.args
    shown = window.state.shown
    assert shown is not earlier and shown.outcome == CANCELLED
    with Image.open(target) as written:
        assert np.array_equal(np.asarray(written.convert("RGB")), np.asarray(shown.result))
