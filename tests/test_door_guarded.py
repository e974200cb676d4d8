"""The door for Python is as guarded as the command line: what ``style-studio render`` refuses, ``stylize``,
``stylize_video`` and ``Stylized.save`` refuse too, with a ``StyleStudioError`` naming the value, by the same check;
what it accepts (``style_layers="relu1_1:1"``), they accept the same way."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import style_studio
from style_studio.cli import main
from style_studio.cli.parser import build_parser, preset_base, settings_from_args
from style_studio.core import ImageLoadError, OutputError, SettingsError, StyleStudioError, load_image, read_metadata
from tests.clips import camera_pan, write_clip
from tests.conftest import SAMPLES

PHOTO = SAMPLES / "content" / "chelsea.png"
PAINTING = SAMPLES / "style" / "starry_night.jpg"
SCREAM = SAMPLES / "style" / "the_scream.jpg"
FAST = {"size": 48, "iterations": 2, "weights": "untrained"}
FAST_FLAGS = ["--size", "48", "--iterations", "2", "--weights", "untrained"]


@pytest.fixture(autouse=True)
def _tiny(tiny_network: None) -> None:
    """The tiny test network for "untrained"."""


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def run_cli(*args: str | Path) -> tuple[int, str]:
    err = io.StringIO()
    code = main([str(a) for a in args], stdout=io.StringIO(), stderr=err)
    return code, err.getvalue()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A photo and a painting of the user's, in a folder of their own."""
    shutil.copy(PHOTO, tmp_path / "photo.png")
    shutil.copy(PAINTING, tmp_path / "style.jpg")
    return tmp_path / "photo.png", tmp_path / "style.jpg"


# 1. A picture in memory is read as its file would be, or refused naming it --------------------------------------------


def test_a_closed_pil_image_is_refused_naming_it() -> None:
    closed = Image.open(PHOTO)
    closed.close()
    with pytest.raises(ImageLoadError, match="chelsea.png: the image was closed"):
        style_studio.stylize(closed, PAINTING, **FAST)
    style = Image.open(PAINTING)
    style.load()
    style.close()
    with pytest.raises(ImageLoadError, match="starry_night.jpg: the image was closed"):
        style_studio.stylize(PHOTO, style, **FAST)


@pytest.mark.parametrize("name", ["half.png", "half.jpg"])
def test_a_pil_image_of_a_truncated_file_is_refused_naming_the_file(tmp_path: Path, name: str) -> None:
    whole = (PHOTO if name.endswith(".png") else PAINTING).read_bytes()
    half = tmp_path / name
    half.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ImageLoadError, match=f"{name}: the file is truncated or damaged"):
        load_image(half)  # as the command line says it
    with Image.open(half) as opened, pytest.raises(ImageLoadError, match=f"{name}: the file is truncated or damaged"):
        style_studio.stylize(opened, PAINTING, **FAST)
    with Image.open(half) as opened, pytest.raises(ImageLoadError, match=f"{name}: the file is truncated or damaged"):
        style_studio.stylize(PHOTO, opened, **FAST)


def _in_mode(mode: str) -> Image.Image:
    rgba = Image.fromarray(np.asarray(Image.open(PHOTO).convert("RGBA").resize((48, 32))))  # no profile
    rgba.putalpha(Image.linear_gradient("L").resize((48, 32)))
    if mode == "La":
        return rgba.convert("LA").convert("La")
    if mode == "I;16":
        return Image.fromarray(np.asarray(rgba.convert("L"), np.uint16) * 257)
    if mode == "I":
        return Image.fromarray(np.asarray(rgba.convert("L"), np.int32) * 257)
    if mode == "PA":
        return rgba.convert("P").convert("PA")
    return rgba.convert(mode)


@pytest.mark.parametrize("mode", ["La", "LA", "P", "PA", "I;16", "F", "1", "CMYK", "I", "RGBa", "L", "RGBA"])
def test_a_pil_image_of_any_mode_is_read_as_a_file_of_that_mode(tmp_path: Path, mode: str) -> None:
    image = _in_mode(mode)
    picture = style_studio.stylize(image, PAINTING, **FAST)
    assert picture.finished and picture.image.mode == "RGB"
    stored = {"La": "LA", "PA": "RGBA", "I": "I;16", "RGBa": "RGBA"}.get(mode, mode)  # what a file can hold of it
    file = tmp_path / ("in.tif" if stored in ("F", "CMYK") else "in.png")
    (image.convert(stored) if stored != image.mode else image).save(file)
    from style_studio.core.io.imageio import picture_from

    assert np.array_equal(np.asarray(picture_from(image)), np.asarray(load_image(file)))


def test_a_pil_image_over_the_pixel_limit_is_refused_as_its_file_is(tmp_path: Path, monkeypatch) -> None:
    from style_studio.core.io import imageio

    monkeypatch.setattr(imageio, "MAX_PIXELS", 1000)
    with pytest.raises(ImageLoadError, match="chelsea.png: the image is .* over the"):
        load_image(PHOTO)
    with Image.open(PHOTO) as opened, pytest.raises(ImageLoadError, match="chelsea.png: the image is .* over the"):
        style_studio.stylize(opened, PAINTING, **FAST)


# 2. A PIL image opened from a file is that file: a save never replaces it ---------------------------------------------


def test_a_save_never_replaces_a_photo_or_style_given_as_a_pil_image_of_the_file(files: tuple[Path, Path]) -> None:
    photo, style = files
    before = {path: md5(path) for path in files}
    with Image.open(photo) as opened_photo, Image.open(style) as opened_style:
        picture = style_studio.stylize(opened_photo, opened_style, **FAST)
    for target in files:
        with pytest.raises(OutputError, match=target.name):
            picture.save(target)
        with pytest.raises(OutputError, match=target.name):
            picture.save(str(target))
    assert {path: md5(path) for path in files} == before
    document = json.loads(read_metadata(picture.save(photo.with_name("out.png"))))
    assert document["content"] == "photo.png" and document["styles"] == ["style.jpg"]


def test_a_video_never_replaces_a_style_given_as_a_pil_image_of_the_file(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(2))
    style = tmp_path / "style.gif"
    Image.open(PAINTING).convert("RGB").resize((40, 32)).save(style)
    before = md5(style)
    with Image.open(style) as opened, pytest.raises(SettingsError, match="style.gif is one of the job's inputs"):
        style_studio.stylize_video(clip, opened, output=style, **FAST, frame_iterations=1)
    assert md5(style) == before


# 3. Settings go in as the command line reads them, by the command line's own reading ----------------------------------


def _cli_settings(*flags: str, styles: int = 1) -> style_studio.Settings:
    args = build_parser().parse_args(["render", str(PHOTO), *[str(PAINTING)] * styles, "-o", "o.png", *flags])
    return settings_from_args(args, preset_base(args))


def test_the_command_line_s_text_for_layers_and_blend_is_read_as_it_reads_it() -> None:
    picture = style_studio.stylize(PHOTO, PAINTING, SCREAM, **FAST, style_layers="relu1_1:1,relu2_1:0.5",
                                   content_layers="relu4_2,relu3_1", style_blend="2,1")  # fmt: skip
    command_line = _cli_settings(*FAST_FLAGS, "--style-layers", "relu1_1:1,relu2_1:0.5",
                                 "--content-layers", "relu4_2,relu3_1", "--style-blend", "2,1", styles=2)  # fmt: skip
    assert picture.settings.style_layers == (("relu1_1", 1.0), ("relu2_1", 0.5))
    assert picture.settings.content_layers == ("relu4_2", "relu3_1") and picture.settings.style_blend == (2.0, 1.0)
    assert picture.settings == command_line


def test_the_command_line_s_bad_layer_text_is_refused_by_the_same_reading() -> None:
    with pytest.raises(SettingsError) as door:
        style_studio.stylize(PHOTO, PAINTING, **FAST, style_layers="relu1_1:x")
    code, err = run_cli("render", PHOTO, PAINTING, "-o", "o.png", *FAST_FLAGS, "--style-layers", "relu1_1:x")
    assert code == 2 and str(door.value) in err, err


# 4. An argument the door cannot use is refused naming it --------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"style_layers": 5}, "style_layers must map layer names to weights.*got 5"),
        ({"style_layers": [1, 2]}, r"style_layers must map layer names to weights.*got \[1, 2\]"),
        ({"style_layers": "relu1_1:x"}, "'x' is not a number"),
        ({"content_layers": 5}, "content_layers must be a list of layer names.*got 5"),
        ({"style_blend": "2,x"}, "style_blend.*'2,x'"),
        ({"settings": {"size": 64}}, "settings must be a Settings.*dict.*by name"),
        ({"regions": "mask.png"}, "regions must be a Regions.*'mask.png'"),
        ({"progress": 5}, "progress must be a function.*5"),
        ({"cancel": 5}, "cancel must be a CancelToken.*5"),
    ],
)
def test_a_value_the_door_cannot_use_is_refused_with_a_settings_error_naming_it(fields, said) -> None:
    with pytest.raises(SettingsError, match=said):
        style_studio.stylize(PHOTO, PAINTING, **{**FAST, **fields})


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"output": None}, "output must be"),
        ({"output": 3}, "output must be.*3"),
        ({"video": {"start": 1}}, "video must be a VideoOptions.*dict"),
        ({"resume": "no"}, "resume must be True or False.*'no'"),
        ({"settings": {"size": 64}}, "settings must be a Settings"),
        ({"progress": "yes"}, "progress must be a function"),
    ],
)
def test_a_video_s_arguments_the_door_cannot_use_are_refused(tmp_path: Path, fields, said) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(2))
    arguments = {"output": tmp_path / "out.mp4", **FAST, **fields}
    with pytest.raises(SettingsError, match=said):
        style_studio.stylize_video(clip, PAINTING, **arguments)
    assert not (tmp_path / "out.mp4").exists()


@pytest.mark.parametrize("clip", [None, 3])
def test_a_clip_that_is_not_a_file_name_is_refused(clip) -> None:
    with pytest.raises(SettingsError, match=f"clip must be a video file's name.*{clip}"):
        style_studio.stylize_video(clip, PAINTING, output="out.mp4", **FAST)


def test_a_video_to_a_folder_name_with_a_video_s_ending_is_refused_as_video_refuses_it(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "pan.mp4", camera_pan(2))
    named = f"{tmp_path}/new.gif/"
    with pytest.raises(SettingsError, match="names a folder of frames") as refused:
        style_studio.stylize_video(clip, PAINTING, output=named, **FAST, frame_iterations=1)
    assert not (tmp_path / "new.gif").exists()
    code, err = run_cli("video", clip, PAINTING, "-o", named, *FAST_FLAGS, "--frame-iterations", "1")
    assert code == 2 and str(refused.value) in err, err


# 5. A save is checked as the command line's -o is, by the same check --------------------------------------------------


@pytest.fixture
def stylized() -> style_studio.Stylized:
    return style_studio.stylize(PHOTO, PAINTING, **FAST)


@pytest.mark.parametrize("dpi", [-1, math.nan, math.inf, "300", 0.001, 1e6, 0, True])
def test_a_print_resolution_out_of_range_is_refused_as_dpi_is(tmp_path: Path, stylized, dpi) -> None:
    target = tmp_path / "print.png"
    with pytest.raises(OutputError, match="the print resolution must be from 1 to 10000 dpi, got") as refused:
        stylized.save(target, dpi=dpi)
    assert not target.exists() and repr(dpi)[:8] in str(refused.value)
    if isinstance(dpi, float):  # the command line takes only numbers: it says the same of the same number
        code, err = run_cli("render", PHOTO, PAINTING, "-o", target, *FAST_FLAGS, "--dpi", repr(dpi))
        assert code == 2 and str(refused.value) in err, err


def test_a_print_resolution_in_range_is_written(tmp_path: Path, stylized) -> None:
    with Image.open(stylized.save(tmp_path / "print.png", dpi=1.5)) as saved:
        assert saved.info["dpi"][0] == pytest.approx(1.5, abs=0.01)


@pytest.mark.parametrize("own", [0.01, 50_000.0])
def test_a_photo_s_own_resolution_out_of_range_is_not_carried_into_an_output(tmp_path: Path, own: float) -> None:
    photo = tmp_path / "photo.tif"
    Image.open(PHOTO).convert("RGB").save(photo, dpi=(own, own))
    saved = style_studio.stylize(photo, PAINTING, **FAST).save(tmp_path / "door.png")
    code, err = run_cli("render", photo, PAINTING, "-o", tmp_path / "cli.png", *FAST_FLAGS)
    assert code == 0, err
    for made in (saved, tmp_path / "cli.png"):
        with Image.open(made) as image:
            assert image.info["dpi"][0] == pytest.approx(72, abs=0.01)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"bit_depth": 12}, "the bit depth must be 8 or 16, not 12"),
        ({"bit_depth": 16.0}, "the bit depth must be 8 or 16, not 16.0"),
        ({"bit_depth": "16"}, "the bit depth must be 8 or 16, not '16'"),
        ({"quality": 0}, "the quality must be a whole number from 1 to 100, got 0"),
        ({"quality": 101}, "the quality must be a whole number from 1 to 100, got 101"),
        ({"quality": "90"}, "the quality must be a whole number from 1 to 100, got '90'"),
        ({"quality": 95.5}, "the quality must be a whole number from 1 to 100, got 95.5"),
    ],
)
def test_a_bit_depth_or_quality_out_of_range_is_refused(tmp_path: Path, stylized, options, said) -> None:
    target = tmp_path / "out.jpg"
    with pytest.raises(OutputError, match=said):
        stylized.save(target, **options)
    assert not target.exists()


def test_a_bit_depth_the_command_line_refuses_the_door_refuses_with_its_words(tmp_path: Path, stylized) -> None:
    with pytest.raises(OutputError) as refused:
        stylized.save(tmp_path / "out.jpg", bit_depth=16)
    code, err = run_cli("render", PHOTO, PAINTING, "-o", tmp_path / "out.jpg", *FAST_FLAGS, "--bit-depth", "16")
    assert code == 2 and str(refused.value) in err, err


def test_a_save_to_a_name_ending_in_a_slash_is_refused_as_render_refuses_it(tmp_path: Path, stylized) -> None:
    named = f"{tmp_path}/new.png/"
    with pytest.raises(OutputError, match="so it names a folder") as refused:
        stylized.save(named)
    assert not (tmp_path / "new.png").exists()
    code, err = run_cli("render", PHOTO, PAINTING, "-o", named, *FAST_FLAGS)
    assert code == 2 and str(refused.value) in err, err
    assert not (tmp_path / "new.png").exists()


@pytest.mark.parametrize("path", [None, 3, b"out.png"])
def test_a_save_to_what_is_not_a_file_name_is_refused(stylized, path) -> None:
    with pytest.raises(OutputError, match="must be a file's name"):
        stylized.save(path)


def test_every_refusal_is_a_style_studio_error(tmp_path: Path, stylized) -> None:
    """What a script catches: ``StyleStudioError``, never a ValueError, TypeError or OverflowError."""
    for call in (
        lambda: stylized.save(tmp_path / "a.png", dpi=-1),
        lambda: stylized.save(tmp_path / "a.png", quality=None),
        lambda: style_studio.stylize(PHOTO, PAINTING, **FAST, style_layers="relu1_1"[::-1]),
        lambda: style_studio.stylize(PHOTO, PAINTING, **FAST, settings="quick"),
    ):
        with pytest.raises(StyleStudioError):
            call()


# 6. What a hostile review found --------------------------------------------------------------------------------------


def test_a_save_after_changing_folder_never_replaces_the_photo(files: tuple[Path, Path], monkeypatch) -> None:
    """The inputs were kept as given, relative: after ``%cd sub``, ``save("../photo.png")`` replaced the photo."""
    photo = files[0]
    (photo.parent / "sub").mkdir()
    before = md5(photo)
    monkeypatch.chdir(photo.parent)
    by_name = style_studio.stylize("photo.png", "style.jpg", **FAST)
    with Image.open("photo.png") as opened:
        by_image = style_studio.stylize(opened, "style.jpg", **FAST)
    monkeypatch.chdir(photo.parent / "sub")
    for picture in (by_name, by_image):
        with pytest.raises(OutputError, match="photo.png"):
            picture.save("../photo.png")
    assert md5(photo) == before


@pytest.mark.parametrize("name", ["x" * 300 + ".png", "o.png\0x"])
def test_a_save_to_a_name_the_system_cannot_take_is_refused_in_one_short_line(tmp_path, stylized, name) -> None:
    with pytest.raises(OutputError) as refused:
        stylized.save(tmp_path / name if "\0" not in name else name)
    assert len(str(refused.value)) <= 400


def test_a_photo_that_is_a_pipe_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    """A named pipe blocked the read for ever; /dev/zero filled the memory."""
    os.mkfifo(tmp_path / "pipe.png")
    for photo in (tmp_path / "pipe.png", Path("/dev/zero")):
        with pytest.raises(ImageLoadError, match="not a plain file"):
            style_studio.stylize(photo, PAINTING, **FAST)
    with pytest.raises(SettingsError, match="not a plain file"):
        style_studio.stylize(PHOTO, PAINTING, preset="/dev/zero", **FAST)


def test_a_photo_name_too_long_for_the_system_is_one_short_line_on_the_command_line(tmp_path: Path) -> None:
    code, err = run_cli("x" * 5000 + ".png", PAINTING, "-o", tmp_path / "o.png", *FAST_FLAGS)
    assert code == 2 and len(err.splitlines()) == 1 and len(err) <= 401, err[:500]
    code, err = run_cli("render", PHOTO, PAINTING, "-o", tmp_path / ("x" * 300 + ".png"), *FAST_FLAGS)
    assert code == 2 and len(err.splitlines()) == 1 and len(err) <= 401 and "too long" in err, err[:500]


def test_numpy_numbers_and_big_endian_pixels_are_taken_as_python_s() -> None:
    plain = style_studio.stylize(PHOTO, PAINTING, **FAST, seed=3)
    numpy = style_studio.stylize(PHOTO, PAINTING, **{**FAST, "size": np.int64(48)}, seed=np.int64(3))
    assert numpy.settings == plain.settings and type(numpy.settings.size) is int
    assert np.array_equal(np.asarray(numpy.image), np.asarray(plain.image))
    pixels = (np.asarray(Image.open(PHOTO).convert("RGB")).astype(np.uint16) * 257).astype(">u2")
    assert np.array_equal(np.asarray(style_studio.stylize(pixels, PAINTING, **FAST).image),
                          np.asarray(style_studio.stylize(PHOTO, PAINTING, **FAST).image))  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"average": "yes"}, "average must be true or false"),
        ({"average": None}, "average must be true or false"),
        ({"device": "cuda:00"}, "device must be"),
        ({"device": "cuda:99999999999999999999"}, "device must be"),
        ({"device": "cpu\n"}, "device must be"),
        ({"step_size": 1e-200}, "step_size must be a number from 1e-06"),
    ],
)
def test_a_value_another_surface_would_break_on_is_refused_where_it_enters(fields, said) -> None:
    with pytest.raises(SettingsError, match=said):
        style_studio.stylize(PHOTO, PAINTING, **FAST, **fields)
    flags = [f"--{name.replace('_', '-')}" for name in fields]
    if "average" in fields:
        return  # a true/false option on the command line takes no value
    code, err = run_cli("render", PHOTO, PAINTING, "-o", "never.png", *FAST_FLAGS, flags[0], str(*fields.values()))
    assert code == 2 and said.split(" must")[0] in err
