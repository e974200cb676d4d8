"""Print-quality files: photos in wide-gamut colour spaces read as sRGB, 16-bit exports, profiles and DPI."""

from __future__ import annotations

import io

import numpy as np
import png
import pytest
import tifffile
from PIL import Image, ImageCms

from style_studio.core.errors import ImageSaveError
from style_studio.core.io import imageio
from tests.conftest import ROOT

#: Adobe RGB (1998), as an ICC profile (ghostscript's a98.icc, "No copyright, use freely").
ADOBE_RGB = (ROOT / "tests" / "data" / "adobe-rgb-1998.icc").read_bytes()
METADATA = '{"format": "style-studio", "version": 1, "settings": {}}'


def adobe_to_srgb(rgb):
    """The reference conversion, from the two standards' published matrices (D65 white, no adaptation)."""
    linear = (np.asarray(rgb, dtype=np.float64) / 255) ** (563 / 256)
    adobe_to_xyz = np.array([[0.5767, 0.1856, 0.1882], [0.2974, 0.6273, 0.0753], [0.0270, 0.0707, 0.9911]])
    xyz_to_srgb = np.array([[3.2406, -1.5372, -0.4986], [-0.9689, 1.8758, 0.0415], [0.0557, -0.2040, 1.0570]])
    srgb = np.clip(xyz_to_srgb @ adobe_to_xyz @ linear, 0, 1)
    encoded = np.where(srgb <= 0.0031308, 12.92 * srgb, 1.055 * srgb ** (1 / 2.4) - 0.055)
    return encoded * 255


def tagged(colours, fmt, profile=ADOBE_RGB, dpi=(240, 240)) -> bytes:
    """A row of 16 px squares, one per colour (JPEG's 8 px blocks stay inside a square)."""
    image = Image.new("RGB", (16 * len(colours), 16))
    for x, colour in enumerate(colours):
        image.paste(tuple(colour), (16 * x, 0, 16 * x + 16, 16))
    buffer = io.BytesIO()
    jpeg = {"quality": 100, "subsampling": 0} if fmt == "JPEG" else {}
    image.save(buffer, format=fmt, icc_profile=profile, dpi=dpi, **jpeg)
    return buffer.getvalue()


def square(picture, x):
    return picture.getpixel((16 * x + 8, 8))


COLOURS = [(128, 64, 32), (40, 180, 90), (200, 200, 220), (10, 60, 150)]


@pytest.mark.parametrize("fmt", ["PNG", "TIFF", "JPEG"])
def test_an_adobe_rgb_photo_is_read_in_srgb_with_the_right_colours(fmt):
    picture = imageio.decode_image(tagged(COLOURS, fmt), f"adobe.{fmt.lower()}")
    tolerance = 2.5 if fmt != "JPEG" else 4  # JPEG's own rounding at quality 100
    for x, colour in enumerate(COLOURS):
        expected = adobe_to_srgb(colour)
        assert np.abs(np.array(square(picture, x)) - expected).max() <= tolerance, colour
    # Read as if it were sRGB, the green would be off by far more: the conversion matters.
    assert np.abs(np.array(COLOURS[1]) - adobe_to_srgb(COLOURS[1])).max() > 20
    assert picture.info["dpi"] == pytest.approx((240, 240), abs=0.01)


def test_a_photo_without_a_profile_or_with_a_broken_one_is_read_as_srgb():
    plain = imageio.decode_image(tagged(COLOURS, "PNG", profile=None), "plain.png")
    assert [square(plain, x) for x in range(4)] == COLOURS
    broken = imageio.decode_image(tagged(COLOURS, "PNG", profile=b"not a profile" * 20), "broken.png")
    assert [square(broken, x) for x in range(4)] == COLOURS


def gradient() -> np.ndarray:
    """A smooth ramp: 8 bits would band it into 256 steps; 16 keep 4000 distinct values."""
    ramp = np.linspace(0, 1, 4000, dtype=np.float32)
    return np.stack([ramp, ramp[::-1], np.full_like(ramp, 0.5)], axis=-1)[None].repeat(3, axis=0)


def is_srgb(profile: bytes) -> bool:
    return "sRGB" in ImageCms.getProfileDescription(ImageCms.ImageCmsProfile(io.BytesIO(profile)))


def test_a_16_bit_png_keeps_the_gradations_the_profile_the_dpi_and_the_settings(tmp_path):
    path = imageio.save_image(gradient(), tmp_path / "print.png", METADATA, bit_depth=16, dpi=(300, 300))
    width, height, rows, info = png.Reader(bytes=path.read_bytes()).asDirect()
    pixels = np.array([np.asarray(row) for row in rows]).reshape(height, width, 3)
    assert info["bitdepth"] == 16 and (width, height) == (4000, 3)
    assert len(np.unique(pixels[..., 0])) == 4000
    np.testing.assert_allclose(pixels[0, :, 0] / 65535, gradient()[0, :, 0], atol=1 / 65535)
    assert imageio.read_metadata(path) == METADATA
    with Image.open(path) as opened:
        assert is_srgb(opened.info["icc_profile"])
        assert opened.info["dpi"] == pytest.approx((300, 300), abs=0.05)
    assert not [p for p in tmp_path.iterdir() if p.name != "print.png"]


def test_a_16_bit_tiff_keeps_the_gradations_the_profile_the_dpi_and_the_settings(tmp_path):
    path = imageio.save_image(gradient(), tmp_path / "print.tif", METADATA, bit_depth=16, dpi=(300, 300))
    with tifffile.TiffFile(path) as tiff:
        page = tiff.pages[0]
        pixels = page.asarray()
        assert pixels.dtype == np.uint16 and pixels.shape == (3, 4000, 3)
        assert is_srgb(page.tags["InterColorProfile"].value)
        assert page.tags["XResolution"].value == (300, 1)
    assert len(np.unique(pixels[..., 0])) == 4000
    assert imageio.read_metadata(path) == METADATA


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".tif", ".webp"])
def test_8_bit_exports_carry_the_srgb_profile(tmp_path, suffix):
    path = imageio.save_image(gradient(), tmp_path / f"screen{suffix}", METADATA, dpi=(150, 150))
    with Image.open(path) as opened:
        assert opened.mode == "RGB" and is_srgb(opened.info["icc_profile"])
        if suffix != ".webp":
            assert opened.info["dpi"] == pytest.approx((150, 150), abs=0.05)


def test_16_bits_in_a_format_without_them_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(ImageSaveError, match="16-bit pictures can be saved as .png or .tif, not .jpg"):
        imageio.save_image(gradient(), tmp_path / "print.jpg", METADATA, bit_depth=16)
    assert list(tmp_path.iterdir()) == []
