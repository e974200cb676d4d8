"""The door for Python users: ``style_studio.stylize`` and ``stylize_video``, as a notebook calls them."""

from __future__ import annotations

import inspect
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import png
import pytest
from PIL import Image

import style_studio
from style_studio.cli import main
from style_studio.core import ImageLoadError, OutputError, SettingsError, read_metadata
from style_studio.core import settings as settings_mod
from tests.clips import camera_pan, write_clip
from tests.conftest import SAMPLES

PHOTO = SAMPLES / "content" / "chelsea.png"
PAINTING = SAMPLES / "style" / "starry_night.jpg"
SCREAM = SAMPLES / "style" / "the_scream.jpg"
FAST = {"size": 48, "iterations": 3, "weights": "untrained"}


@pytest.fixture(autouse=True)
def _tiny(tiny_network: None) -> None:
    """The tiny test network for "untrained"."""


def test_the_door_s_signatures_are_pinned():
    """A notebook's calls keep working: changing these is a change of the public API, made on purpose."""
    assert str(inspect.signature(style_studio.stylize)) == (
        "(photo: 'PictureSource', *styles: 'PictureSource', preset: 'str | os.PathLike[str] | None' = None, "
        "settings: 'Settings | None' = None, regions: 'Regions | None' = None, "
        "progress: 'Callable[[Progress], None] | None' = None, cancel: 'CancelToken | None' = None, "
        "**fields: 'Any') -> 'Stylized'"
    )
    assert str(inspect.signature(style_studio.stylize_video)) == (
        "(clip: 'str | os.PathLike[str]', *styles: 'PictureSource', output: 'str | os.PathLike[str]', "
        "preset: 'str | os.PathLike[str] | None' = None, settings: 'Settings | None' = None, "
        "video: 'VideoOptions | None' = None, progress: 'Callable[[FrameRecord], None] | None' = None, "
        "cancel: 'CancelToken | None' = None, resume: 'bool' = True, **fields: 'Any') -> 'RenderedVideo'"
    )
    assert str(inspect.signature(style_studio.Stylized.save)) == (
        "(self, path: 'str | os.PathLike[str]', *, bit_depth: 'int' = 8, dpi: 'float | None' = None, "
        "quality: 'int' = 95) -> 'Path'"
    )


def test_the_package_is_typed_and_names_its_door_without_importing_torch():
    assert (Path(style_studio.__file__).parent / "py.typed").is_file()
    code = (
        "import sys, style_studio; style_studio.stylize; style_studio.Settings; style_studio.CancelToken; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert {"stylize", "stylize_video", "Stylized", "Progress", "CancelToken"} <= set(style_studio.__all__)
    with pytest.raises(AttributeError, match="no attribute 'stylise'"):
        style_studio.stylise  # noqa: B018


def test_stylize_renders_and_saves_the_picture_with_its_settings(tmp_path):
    heard: list[style_studio.Progress] = []
    picture = style_studio.stylize(PHOTO, PAINTING, **FAST, seed=3, progress=heard.append)
    assert picture.finished and picture.image.size == (48, 32)
    assert picture.settings.seed == 3 and picture.weights.startswith("untrained")
    assert [record.iteration for record in heard] == [0, 1, 2, 3, 3]
    saved = picture.save(tmp_path / "cat.png")
    with Image.open(saved) as image:
        assert image.size == (48, 32)
        assert np.array_equal(np.asarray(image.convert("RGB")), np.asarray(picture.image))
    document = json.loads(read_metadata(saved))
    assert settings_mod.loads(json.dumps(document)).seed == 3
    assert document["content"] == "chelsea.png" and document["styles"] == ["starry_night.jpg"]


def test_stylize_makes_the_command_line_s_picture(tmp_path):
    """One run below every path: the same settings give the same pixels and the same job key."""
    target = tmp_path / "cli.png"
    out, err = io.StringIO(), io.StringIO()
    assert main(["render", str(PHOTO), str(PAINTING), "-o", str(target), "--size", "48", "--iterations", "3",
                 "--weights", "untrained", "--seed", "5"], stdout=out, stderr=err) == 0, err.getvalue()  # fmt: skip
    picture = style_studio.stylize(str(PHOTO), str(PAINTING), **FAST, seed=5)
    with Image.open(target) as image:
        assert np.array_equal(np.asarray(image.convert("RGB")), np.asarray(picture.image))
    ours = picture.save(tmp_path / "door.png")
    assert json.loads(read_metadata(ours))["job_key"] == json.loads(read_metadata(target))["job_key"]


def test_pictures_in_memory_go_in_as_files_do():
    """A PIL image and an array of the photo's pixels (uint8, uint16 or floats) make the file's picture."""
    photo = Image.open(PHOTO).convert("RGB")
    pixels = np.asarray(photo)
    from_file = np.asarray(style_studio.stylize(PHOTO, PAINTING, **FAST).image)
    for given in (photo, pixels, pixels.astype(np.uint16) * 257, pixels.astype(np.float32) / 255):
        assert np.array_equal(np.asarray(style_studio.stylize(given, Image.open(PAINTING), **FAST).image), from_file)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (np.zeros((4, 4, 2), np.uint8), "shape"),
        (np.full((4, 4, 3), 1.5, np.float32), "from 0 to 1"),
        (np.zeros((4, 4, 3), np.int64), "int64"),
        ("no-such-photo.jpg", "does not exist"),
        (3, "expected a file name, a PIL image or an array"),
    ],
)
def test_a_picture_that_cannot_be_used_is_refused_with_the_reason(given, said):
    with pytest.raises(ImageLoadError, match=said):
        style_studio.stylize(given, PAINTING, **FAST)


def test_settings_go_by_the_command_line_s_names_and_are_checked_before_anything_runs():
    quick = style_studio.stylize(PHOTO, PAINTING, SCREAM, preset="quick", style_blend=(2, 1), **FAST)
    assert quick.settings.first_scale == settings_mod.PRESETS["quick"]["first_scale"]
    assert quick.settings.style_blend == (2.0, 1.0)
    layers = style_studio.stylize(PHOTO, PAINTING, style_layers={"relu1_1": 2, "relu3_1": 0.5}, **FAST)
    assert layers.settings.style_layers == (("relu1_1", 2.0), ("relu3_1", 0.5))
    again = style_studio.stylize(PHOTO, PAINTING, settings=layers.settings, size=40)
    assert again.settings == settings_mod.Settings(**{**vars(layers.settings), "size": 40})
    with pytest.raises(SettingsError, match="unknown setting 'style_wieght'"):
        style_studio.stylize(PHOTO, PAINTING, style_wieght=3, **FAST)
    with pytest.raises(SettingsError, match="size"):
        style_studio.stylize(PHOTO, PAINTING, **{**FAST, "size": 4})
    with pytest.raises(SettingsError, match="2 style blend weights given for 1 style images"):
        style_studio.stylize(PHOTO, PAINTING, style_blend=(1, 2), **FAST)
    with pytest.raises(SettingsError, match="unknown preset 'fastest'"):
        style_studio.stylize(PHOTO, PAINTING, preset="fastest", **FAST)
    with pytest.raises(SettingsError, match="not both"):
        style_studio.stylize(PHOTO, PAINTING, preset="quick", settings=layers.settings)
    with pytest.raises(SettingsError, match="at least one style"):
        style_studio.stylize(PHOTO)


def test_a_cancelled_run_returns_the_picture_so_far():
    cancel = style_studio.CancelToken()

    def stop_after_the_second(record: style_studio.Progress) -> None:
        if record.iteration == 2:
            cancel.cancel()

    picture = style_studio.stylize(PHOTO, PAINTING, **{**FAST, "iterations": 50}, progress=stop_after_the_second,
                                   cancel=cancel)  # fmt: skip
    assert not picture.finished and picture.outcome == style_studio.Stopped()
    assert picture.image.size == (48, 32)


def test_a_save_never_writes_over_the_picture_s_own_photo_and_keeps_16_bits(tmp_path):
    copy = tmp_path / "photo.png"
    copy.write_bytes(PHOTO.read_bytes())
    picture = style_studio.stylize(copy, PAINTING, **FAST)
    with pytest.raises(OutputError, match="photo.png"):
        picture.save(copy)
    assert copy.read_bytes() == PHOTO.read_bytes()
    deep = picture.save(tmp_path / "print.png", bit_depth=16, dpi=300)
    width, height, rows, info = png.Reader(bytes=deep.read_bytes()).asDirect()
    values = np.vstack([np.asarray(row, np.uint16) for row in rows])
    assert info["bitdepth"] == 16 and (width, height) == (48, 32)
    assert np.any(values % 257 != 0)  # the run's own values, not the 8-bit picture's widened
    with Image.open(deep) as image:
        assert round(image.info["dpi"][0]) == 300


def test_stylize_video_writes_the_clip_styled_and_goes_on_after_a_stop(tmp_path):
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(3))
    output = tmp_path / "styled.mp4"
    cancel = style_studio.CancelToken()
    frames: list[int] = []

    def stop_in_the_second_frame(record: style_studio.FrameRecord) -> None:
        frames.append(record.frame)
        if record.frame == 2:
            cancel.cancel()

    video = {"size": 48, "iterations": 3, "frame_iterations": 2, "weights": "untrained"}
    with pytest.raises(style_studio.Cancelled):
        style_studio.stylize_video(clip, PAINTING, output=output, progress=stop_in_the_second_frame, cancel=cancel,
                                   **video)  # fmt: skip
    assert not output.exists()
    heard: list[style_studio.FrameRecord] = []
    rendered = style_studio.stylize_video(clip, PAINTING, output=output, progress=heard.append, **video)
    assert rendered.frames == 3 and output.is_file()
    assert min(record.frame for record in heard) == 2  # the first frame was kept, not made again
    with pytest.raises(SettingsError, match="frame_iterations"):
        style_studio.stylize_video(clip, PAINTING, output=tmp_path / "x.mp4", frame_iterations=-1, **FAST)


def test_a_notebook_shows_the_picture_a_cell_returns():
    picture = style_studio.stylize(PHOTO, PAINTING, **FAST)
    with Image.open(io.BytesIO(picture._repr_png_())) as shown:
        assert np.array_equal(np.asarray(shown.convert("RGB")), np.asarray(picture.image))


def test_the_imagenet_download_a_first_call_makes_is_told_in_the_log(tmp_path, monkeypatch, caplog):
    import hashlib
    import logging

    from style_studio.core import StyleStudioError
    from style_studio.core.network import weights

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    payload = b"v" * (3 << 20)  # not weights: the download is what is heard, then loading them fails
    source = tmp_path / f"vgg19-{hashlib.sha256(payload).hexdigest()[:8]}.pth"
    source.write_bytes(payload)
    monkeypatch.setattr(weights, "IMAGENET_URL", source.as_uri())
    with caplog.at_level(logging.INFO, logger="style_studio.api"), pytest.raises(StyleStudioError):
        style_studio.stylize(PHOTO, PAINTING, size=48, iterations=2, weights="imagenet")
    told = [r.getMessage() for r in caplog.records if "downloading the ImageNet VGG19 weights" in r.getMessage()]
    assert told and told[-1].endswith("3 of 3 MB") and len(told) <= 11
