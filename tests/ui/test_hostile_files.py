"""Every hostile or unusual file, through the three doors: the core loader, the CLI, a drop on the window.

A file that cannot be used gives a message naming it and the reason (exit
status 2 and one line in the CLI; a message in the window, where whatever was
loaded before stays). A file that can be used loads, upright and in RGB.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from style_studio.cli import main
from style_studio.core.errors import ImageLoadError
from style_studio.core.io.imageio import load_image
from tests.conftest import SAMPLES
from tests.hostile import CASES, THIN

STYLE = str(SAMPLES / "style" / "starry_night.jpg")
IDS = [name for name, _, _ in CASES]


def cli(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    return main(list(args), stdout=io.StringIO(), stderr=err), err.getvalue()


def drop_file(widget, path: Path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    widget.dropEvent(
        QDropEvent(
            QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
        )
    )


@pytest.mark.parametrize(("name", "make", "error"), CASES, ids=IDS)
def test_core_loader(tmp_path, name, make, error):
    path = make(tmp_path)
    if error is None:
        image = load_image(path)
        assert image.mode == "RGB" and min(image.size) >= 1
    else:
        with pytest.raises(ImageLoadError) as info:
            load_image(path)
        assert str(info.value).startswith(str(path)) and error in str(info.value)


@pytest.mark.parametrize(("name", "make", "error"), CASES, ids=IDS)
def test_cli(tmp_path, name, make, error, tiny_network):
    path = make(tmp_path)
    out = tmp_path / "out.png"
    for args in ([str(path), STYLE], [STYLE, str(path)]):  # as content, then as style
        code, err = cli(
            "render",
            *args,
            "-o",
            str(out),
            "--size",
            "32",
            "--iterations",
            "1",
            "--weights",
            "untrained",
            "--progress",
            "none",
        )
        if error is None:
            assert code == 0, err
            out.unlink()
        else:
            assert code == 2 and error in err and len(err.strip().splitlines()) == 1, err
            assert not out.exists()


@pytest.mark.parametrize(("name", "make", "error"), CASES, ids=IDS)
def test_window_drop(window, tmp_path, name, make, error):
    path = make(tmp_path)
    drop_file(window.inputs.content_zone, path)
    drop_file(window.inputs.style_zone, path)
    if error is None:
        assert window.inputs.content.path == path and window.inputs.style_rows[-1].item.path == path
    else:
        assert window.inputs.content.name == "chelsea.png" and len(window.inputs.style_rows) == 1
        assert error in window.banner.text() and path.name in window.banner.text()


def test_unreadable_file_through_all_three_doors(window, tmp_path, monkeypatch):
    path = tmp_path / "secret.png"
    path.write_bytes((SAMPLES / "content" / "chelsea.png").read_bytes())
    real_open = open

    def denying_open(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file) == path:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", denying_open)
    with pytest.raises(ImageLoadError, match="permission denied"):
        load_image(path)
    code, err = cli("render", str(path), STYLE, "-o", str(tmp_path / "o.png"), "--weights", "untrained")
    assert code == 2 and "permission denied" in err
    drop_file(window.inputs.content_zone, path)
    assert "permission denied" in window.banner.text() and window.inputs.content.name == "chelsea.png"


def test_a_too_thin_image_loads_but_is_refused_before_a_run(window, tmp_path):
    path = THIN[1](tmp_path)
    assert load_image(path).size == (1, 10000)
    code, err = cli(
        "render", str(path), STYLE, "-o", str(tmp_path / "o.png"), "--weights", "untrained", "--progress", "none"
    )
    assert code == 2 and "at least 16 pixels are needed on each side" in err
    code, err = cli(
        "render", STYLE, str(path), "-o", str(tmp_path / "o.png"), "--weights", "untrained", "--progress", "none"
    )
    assert code == 2 and "style image 1 (1×10000)" in err
    drop_file(window.inputs.content_zone, path)
    assert window.inputs.content.name == "chelsea.png"
    assert "thin.png" in window.banner.text() and "at least 16 pixels" in window.banner.text()
