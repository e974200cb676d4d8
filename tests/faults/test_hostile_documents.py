"""Hostile masks, presets and dropped pictures: a clear error naming the file, never a crash or a runaway load."""

from __future__ import annotations

import base64
import json
import math
import struct
import zlib

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from style_studio.core import settings as settings_mod
from style_studio.core.objective.masks import RegionSpec, regions_from_mask
from style_studio.core.objective.regions import Region, RegionError, Regions, from_document
from style_studio.core.settings import SettingsError


def png_header_only(path, width, height, colour_type=0):
    """A PNG that says it is width x height (8-bit grey by default) and holds a few bytes: a bomb's header."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )
    return path


# 196 MP is over twice Pillow's limit (it raises); 100 MP is between 1x and 2x (it only warns, then decodes gigabytes).
HUGE = [pytest.param(14_000, 14_000, id="196 MP"), pytest.param(10_000, 10_000, id="100 MP")]


@pytest.mark.parametrize(("width", "height"), HUGE)
def test_an_oversized_mask_is_refused_from_its_header(tmp_path, width, height):
    path = png_header_only(tmp_path / "huge-mask.png", width, height)
    with pytest.raises(RegionError, match="huge-mask.png: the image is too large|huge-mask.png: the image is 10000"):
        regions_from_mask(path, [RegionSpec((255, 255, 255))], 1)


@pytest.mark.parametrize(("width", "height"), HUGE)
def test_an_oversized_mask_in_a_preset_is_refused(width, height, tmp_path):
    mask = png_header_only(tmp_path / "m.png", width, height).read_bytes()
    record = {"width": 8, "height": 8, "regions": [{"name": "sky", "colour": "#ff0000",
                                                    "mask": base64.b64encode(mask).decode()}]}  # fmt: skip
    with pytest.raises(RegionError, match="region 'sky'.s mask: the image"):
        from_document(json.dumps({"format": "style-studio", "version": 1, "settings": {}, "regions": record}))


@pytest.mark.parametrize(("width", "height"), HUGE)
def test_an_oversized_picture_dropped_on_the_window_is_a_message(window, tmp_path, width, height):
    path = png_header_only(tmp_path / "huge.png", width, height, colour_type=2)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    window.dropEvent(QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                Qt.KeyboardModifier.NoModifier))  # fmt: skip
    assert "huge.png" in window.banner.text() and "megapixel" in window.banner.text()
    assert window.inputs.content.name == "chelsea.png"


def test_a_16_bit_greyscale_mask_is_scaled_not_clipped(tmp_path):
    levels = np.zeros((16, 32), np.uint16)
    levels[:, 16:] = 32768  # half coverage on the right
    levels[0, 0] = 65535  # one pixel full
    path = tmp_path / "deep-mask.png"
    Image.fromarray(levels).save(path)
    with Image.open(path) as opened:
        assert opened.mode in ("I", "I;16")
    regions, _ = regions_from_mask(path, [RegionSpec((255, 255, 255))], 1)
    plane = regions.masks[0]
    assert plane[5, 20] == 128 and plane[5, 5] == 0 and plane[0, 0] == 255


HOSTILE_PRESETS = [
    pytest.param('{"format": "style-studio", "version": 1, "settings": {"size": 1' + "0" * 400 + "}}", "size must be",
                 id="a 401-digit size"),
    pytest.param('{"format": "style-studio", "version": 1, "settings": {"style_weight": 1' + "0" * 400 + "}}",
                 "style_weight must be a number", id="a 401-digit weight"),
    pytest.param('{"format": "style-studio", "version": 1, "settings": {"tv_weight": 1e999}}',
                 "tv_weight must be a number", id="infinity"),
    pytest.param('{"format": "style-studio", "version": 1, "settings": {"seed": 1' + "0" * 5000 + "}}",
                 "not valid JSON", id="a 5001-digit seed"),
    pytest.param("[" * 100_000 + "]" * 100_000, "not valid JSON", id="nested 100000 deep"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), HOSTILE_PRESETS)
def test_a_hostile_preset_is_a_settings_error(text, message):
    with pytest.raises(SettingsError, match=message) as info:
        settings_mod.loads(text, source="evil.json")
    assert "evil.json" in str(info.value) and len(str(info.value)) < 400


def test_a_hostile_preset_in_the_window_is_a_message_and_changes_nothing(window, tmp_path):
    path = tmp_path / "evil.json"
    path.write_text(HOSTILE_PRESETS[0].values[0])
    before = window.state.settings
    assert not window.files.load_preset(path)
    assert "evil.json" in window.banner.text() and window.state.settings == before


@pytest.mark.parametrize("strength", [math.inf, math.nan, 11.0, -1.0])
def test_a_region_strength_that_would_make_the_loss_infinite_is_refused(strength):
    masks = np.full((1, 8, 8), 255, np.uint8)
    regions = Regions((Region("sky", (255, 0, 0), False, (1.0,), strength),), masks)
    with pytest.raises(RegionError, match="strength must be from 0 to 10"):
        regions.check(1)


def test_a_region_with_an_infinite_style_weight_is_refused():
    masks = np.full((1, 8, 8), 255, np.uint8)
    with pytest.raises(RegionError, match="style weight that is not a number"):
        Regions((Region("sky", (255, 0, 0), False, (math.inf,), 1.0),), masks).check(1)


def test_a_preset_region_with_a_huge_strength_is_a_region_error():
    mask = Image.new("L", (8, 8), 255)
    buffer = __import__("io").BytesIO()
    mask.save(buffer, format="PNG")
    record = {"width": 8, "height": 8, "regions": [{"name": "sky", "colour": "#ff0000", "strength": 10**400,
                                                    "mask": base64.b64encode(buffer.getvalue()).decode()}]}  # fmt: skip
    with pytest.raises(RegionError, match="damaged"):
        from_document(json.dumps({"format": "style-studio", "version": 1, "settings": {}, "regions": record}))
