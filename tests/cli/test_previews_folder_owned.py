"""``render --previews DIR``: a run owns its previews folder as it owns its output.

The folder is refused up front, with one line, when it holds another run's previews, is in use by another process,
or clashes with the run's own files; a killed run that goes on finds it as its checkpoint left it.
"""

from __future__ import annotations

import pytest
from PIL import Image

from tests.cli.test_cli import CONTENT, FAST, STYLE, run_cli


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
