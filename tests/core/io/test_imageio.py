"""Images in and out: every input becomes upright 8-bit RGB or a clear error; exports are atomic."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from style_studio.core import settings as settings_mod
from style_studio.core.errors import ImageLoadError, ImageSaveError
from style_studio.core.io.imageio import decode_image, load_image, read_metadata, save_image


def png_bytes(image: Image.Image, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, format=options.pop("format", "PNG"), **options)
    return out.getvalue()


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# -- loading ---------------------------------------------------------------


def test_zero_byte_file(tmp_path):
    with pytest.raises(ImageLoadError, match=r"empty\.png: the file is empty"):
        load_image(write(tmp_path / "empty.png", b""))


def test_truncated_png_and_jpeg(tmp_path):
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8))
    for fmt, name in (("PNG", "cut.png"), ("JPEG", "cut.jpg")):
        data = png_bytes(noise, format=fmt)
        with pytest.raises(ImageLoadError, match=rf"{name}: .*(truncated|damaged)"):
            load_image(write(tmp_path / name, data[: len(data) // 2]))


def test_text_and_html_named_jpg(tmp_path):
    with pytest.raises(ImageLoadError, match=r"notes\.jpg: this is a text file, not an image"):
        load_image(write(tmp_path / "notes.jpg", b"hello, this is not a picture\n"))
    with pytest.raises(ImageLoadError, match=r"page\.jpg: this is a web page"):
        load_image(write(tmp_path / "page.jpg", b"<!DOCTYPE html><html><body>hi</body></html>"))


def test_svg_is_refused_with_what_to_do(tmp_path):
    svg = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'
    with pytest.raises(ImageLoadError, match="SVG drawings are not supported; export it as PNG"):
        load_image(write(tmp_path / "drawing.svg", svg))


def test_unknown_binary_format(tmp_path):
    with pytest.raises(ImageLoadError, match="not an image format Style Studio can read"):
        load_image(write(tmp_path / "blob.bin", bytes(range(256)) * 4))


def test_a_directory_and_a_missing_file_and_a_broken_link(tmp_path):
    with pytest.raises(ImageLoadError, match="is a folder, not an image"):
        load_image(tmp_path)
    with pytest.raises(ImageLoadError, match="does not exist"):
        load_image(tmp_path / "missing.png")
    link = tmp_path / "link.png"
    link.symlink_to(tmp_path / "gone.png")
    with pytest.raises(ImageLoadError, match="link.png: is a link to a missing file"):
        load_image(link)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without read permission")
def test_a_file_without_read_permission(tmp_path):
    path = write(tmp_path / "secret.png", png_bytes(Image.new("RGB", (4, 4))))
    path.chmod(0)
    with pytest.raises(ImageLoadError, match="permission denied"):
        load_image(path)


def test_a_file_without_read_permission_when_running_as_root(tmp_path, monkeypatch):
    path = write(tmp_path / "secret.png", png_bytes(Image.new("RGB", (4, 4))))
    real_open = open

    def denying_open(file, *args, **kwargs):
        if Path(file) == path:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", denying_open)
    with pytest.raises(ImageLoadError, match=r"secret\.png: permission denied"):
        load_image(path)


def test_tiny_and_extreme_aspect_images_load(tmp_path):
    assert load_image(write(tmp_path / "one.png", png_bytes(Image.new("RGB", (1, 1))))).size == (1, 1)
    assert load_image(write(tmp_path / "tall.png", png_bytes(Image.new("L", (1, 10000))))).size == (1, 10000)


def test_a_decompression_bomb_is_refused_before_decoding(tmp_path):
    # A real PNG header claiming 40000×40000, followed by nothing worth decoding.
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 40000, 40000, 8, 2, 0, 0, 0)
    data = (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 100)) + chunk(b"IEND", b"")
    )
    with pytest.raises(ImageLoadError, match=r"bomb\.png: the image is too large to open safely"):
        load_image(write(tmp_path / "bomb.png", data))


def test_cmyk_jpeg_becomes_rgb(tmp_path):
    image = load_image(
        write(tmp_path / "cmyk.jpg", png_bytes(Image.new("CMYK", (8, 8), (0, 255, 255, 0)), format="JPEG"))
    )
    assert image.mode == "RGB"
    r, g, b = image.getpixel((4, 4))
    assert r > 200 and g < 60 and b < 60  # cyan 0, magenta+yellow full: red


def test_16_bit_png_is_scaled_not_clipped(tmp_path):
    values = np.full((4, 4), 32768, dtype=np.uint16)
    image = load_image(write(tmp_path / "deep.png", png_bytes(Image.fromarray(values))))
    assert image.mode == "RGB" and image.getpixel((0, 0)) == (128, 128, 128)


def test_palette_with_transparency_and_gray_with_alpha_are_composited_on_white(tmp_path):
    palette = Image.new("P", (4, 4), 0)
    palette.putpalette([255, 0, 0] + [0, 0, 0] * 255)
    palette.info["transparency"] = 0
    image = load_image(write(tmp_path / "pal.png", png_bytes(palette, transparency=0)))
    assert image.getpixel((0, 0)) == (255, 255, 255)
    gray = Image.new("LA", (4, 4), (0, 128))
    image = load_image(write(tmp_path / "la.png", png_bytes(gray)))
    assert image.mode == "RGB" and 120 < image.getpixel((0, 0))[0] < 135


def test_exif_orientation_6_is_applied(tmp_path):
    image = Image.new("RGB", (40, 20), (255, 0, 0))
    image.paste((0, 0, 255), (0, 0, 20, 20))  # left half blue
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    loaded = load_image(write(tmp_path / "rot.jpg", png_bytes(image, format="JPEG", exif=exif)))
    assert loaded.size == (20, 40)
    assert loaded.getpixel((10, 5))[2] > 200  # the blue half is now on top


def test_animated_gif_and_multipage_tiff_give_the_first_frame(tmp_path):
    frames = [Image.new("RGB", (8, 8), c) for c in ((255, 0, 0), (0, 255, 0))]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:])
    assert load_image(write(tmp_path / "anim.gif", out.getvalue())).getpixel((0, 0)) == (255, 0, 0)
    out = io.BytesIO()
    frames[1].save(out, format="TIFF", save_all=True, append_images=frames[:1])
    assert load_image(write(tmp_path / "pages.tif", out.getvalue())).getpixel((0, 0)) == (0, 255, 0)


def test_paths_with_spaces_and_non_ascii(tmp_path):
    path = write(tmp_path / "my photos é 写真.png", png_bytes(Image.new("RGB", (5, 3))))
    assert load_image(path).size == (5, 3)


def test_decode_image_names_the_source():
    with pytest.raises(ImageLoadError, match=r"^clipboard: "):
        decode_image(b"garbage bytes", "clipboard")


# -- saving ------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".webp", ".tif"])
def test_exported_metadata_round_trips(tmp_path, suffix):
    settings = settings_mod.Settings(
        size=300,
        style_weight=2.5,
        preserve_colors=True,
        weights="untrained",
        style_layers=(("relu1_1", 0.5), ("relu3_1", 1.0)),
    )
    text = settings_mod.dumps(settings, weights_label="untrained VGG19", content="café.png")
    path = save_image(Image.new("RGB", (16, 12), (10, 200, 30)), tmp_path / f"out{suffix}", text)
    assert load_image(path).size == (16, 12)
    embedded = read_metadata(path)
    assert settings_mod.loads(embedded) == settings
    assert json.loads(embedded)["content"] == "café.png"


def test_a_plain_image_has_no_metadata(tmp_path):
    path = write(tmp_path / "plain.png", png_bytes(Image.new("RGB", (4, 4))))
    assert read_metadata(path) is None


def test_unknown_extension_is_refused(tmp_path):
    with pytest.raises(ImageSaveError, match=r"unknown file type \.gif"):
        save_image(Image.new("RGB", (4, 4)), tmp_path / "out.gif")


def test_a_missing_folder_is_named(tmp_path):
    with pytest.raises(ImageSaveError, match="the folder .*nowhere does not exist"):
        save_image(Image.new("RGB", (4, 4)), tmp_path / "nowhere" / "out.png")


def test_a_failed_write_leaves_the_existing_file_untouched(tmp_path, monkeypatch):
    target = tmp_path / "out.png"
    target.write_bytes(b"precious")
    import errno

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Image.Image, "save", full_disk)
    with pytest.raises(ImageSaveError, match="the disk is full"):
        save_image(Image.new("RGB", (4, 4)), target)
    assert target.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.png"]


def test_a_read_only_folder_is_a_clear_error(tmp_path, monkeypatch):
    import errno

    from style_studio.core.io import files

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(files, "create_private", denied)
    with pytest.raises(ImageSaveError, match="permission denied"):
        save_image(Image.new("RGB", (4, 4)), tmp_path / "out.png")


def test_export_is_atomic_and_readable(tmp_path):
    target = tmp_path / "out.jpg"
    target.write_bytes(b"old")
    save_image(Image.new("RGB", (4, 4)), target)
    with Image.open(target) as written:
        assert written.format == "JPEG"
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)
