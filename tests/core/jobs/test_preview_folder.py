"""A previews folder is one run's: taken only for that run, and found as its checkpoint left it when the run goes on."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from style_studio.core.errors import StyleStudioError
from style_studio.core.jobs.preview_folder import LOG, PreviewFolder
from style_studio.core.progress import Progress


def record(step: int, loss: float = 1.0) -> Progress:
    """A record of ``step`` with a (4, 6) preview whose pixels are the step, so that a file tells its step."""
    return Progress(
        scale=1, scales=1, iteration=step, iterations=20, step=step, steps=20, width=6, height=4, total_loss=loss,
        terms={}, style_losses={}, grad_norm=0.0, elapsed=float(step), eta=None, weights="untrained", compute="cpu",
        preview=np.full((4, 6, 3), step, dtype=np.uint8),
    )  # fmt: skip


def lines(folder):
    return [json.loads(line) for line in (folder / LOG).read_text().splitlines()]


def killed_after(folder, run, steps):
    """The folder as a run killed after keeping ``steps`` left it."""
    previews = PreviewFolder(folder)
    with previews.claim(run):
        for step in steps:
            previews.keep(record(step, loss=100.0 + step))


def test_a_run_going_on_keeps_its_previews_to_its_checkpoint_and_drops_the_rest(tmp_path):
    folder = tmp_path / "previews"
    killed_after(folder, "run-a", range(7))
    (folder / "preview-0002.png").unlink()  # a picture the user removed: its line goes too
    (folder / "preview-0009.png").write_bytes(b"killed between its picture and its line")
    with open(folder / LOG, "a") as log:
        log.write('{"file": "preview-0009.png", "run": "run-a", "st')  # cut short by a power cut
    previews = PreviewFolder(folder, going_on=True)
    with previews.claim("run-a", going_on_from=4):
        assert [line["step"] for line in lines(folder)] == [0, 1, 3, 4]
        assert sorted(p.name for p in folder.iterdir()) == [*(f"preview-000{n}.png" for n in (0, 1, 3, 4)), LOG]
        for step in (4, 5, 6):  # step 4 again (a stop saved it twice) is not kept twice
            previews.keep(record(step))
    kept = lines(folder)
    assert [line["step"] for line in kept] == [0, 1, 3, 4, 5, 6]
    assert [line["total_loss"] for line in kept] == [100.0, 101.0, 103.0, 104.0, 1.0, 1.0]
    assert {line["run"] for line in kept} == {"run-a"}
    for line in kept:  # each file holds the picture its line describes
        with Image.open(folder / line["file"]) as picture:
            assert np.asarray(picture.convert("RGB"))[0, 0, 0] == line["step"]


@pytest.mark.parametrize(
    ("left", "run", "going_on_from", "said"),
    [
        ("another run's previews", "run-b", 4, "holds the previews of another run, not of the one going on"),
        ("this run's previews, nothing to go on from", "run-a", None, "there is no unfinished run to go on with"),
        ("pictures without a line", "run-a", 4, "holds the previews of another run"),
    ],
)
def test_a_folder_holding_previews_that_are_not_the_run_going_on_is_refused_untouched(
    tmp_path, left, run, going_on_from, said
):
    folder = tmp_path / "previews"
    killed_after(folder, "run-a", range(7))
    if left == "pictures without a line":
        (folder / LOG).unlink()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(StyleStudioError, match=said), PreviewFolder(folder, going_on=True).claim(run, going_on_from):
        pass
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_new_run_takes_only_a_new_or_empty_folder_that_is_none_of_its_files(tmp_path):
    folder = tmp_path / "previews"
    killed_after(folder, "run-a", range(2))
    assert "previews of an earlier run" in PreviewFolder(folder).problems()[0]
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"")
    assert "one of the run's inputs" in PreviewFolder(photo, [photo]).problems()[0]
    assert "holds the run's input" in PreviewFolder(tmp_path, [photo]).problems()[0]
    out = tmp_path / "new" / "out.png"
    assert "is the run's output too" in PreviewFolder(out, outputs=[out]).problems()[0]
    assert "would hold the run's output out.png" in PreviewFolder(out.parent, outputs=[out]).problems()[0]
    assert PreviewFolder(tmp_path / "other", [photo], outputs=[out]).problems() == []
