"""Hostile and unusual input files, generated on the fly (nothing binary is committed).

Each case is (name, maker, expectation): ``maker(folder)`` writes the file and
returns its path; ``expectation`` is None when the file must load, else a
piece of the error message the user must see.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

Maker = Callable[[Path], Path]


def _save(image: Image.Image, path: Path, **options: object) -> Path:
    out = io.BytesIO()
    image.save(out, **options)
    path.write_bytes(out.getvalue())
    return path


def _noise(size: tuple[int, int] = (64, 48)) -> Image.Image:
    return Image.fromarray(np.random.default_rng(0).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8))


def _truncated(fmt: str, name: str) -> Maker:
    def make(folder: Path) -> Path:
        data = io.BytesIO()
        _noise().save(data, format=fmt)
        path = folder / name
        path.write_bytes(data.getvalue()[: len(data.getvalue()) // 2])
        return path

    return make


def _bomb(folder: Path) -> Path:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 40000, 40000, 8, 2, 0, 0, 0)
    path = folder / "bomb.png"
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )
    return path


def _exif_rotated(folder: Path) -> Path:
    exif = Image.Exif()
    exif[0x0112] = 6
    return _save(_noise((80, 40)), folder / "rotated.jpg", format="JPEG", exif=exif)


def _animated(folder: Path) -> Path:
    frames = [Image.new("RGB", (40, 40), c) for c in ((255, 0, 0), (0, 255, 0))]
    return _save(frames[0], folder / "anim.gif", format="GIF", save_all=True, append_images=frames[1:])


def _multipage(folder: Path) -> Path:
    pages = [Image.new("RGB", (40, 40), c) for c in ((0, 0, 255), (0, 255, 0))]
    return _save(pages[0], folder / "pages.tif", format="TIFF", save_all=True, append_images=pages[1:])


def _palette(folder: Path) -> Path:
    image = _noise().convert("P")
    return _save(image, folder / "palette.png", format="PNG", transparency=0)


def _write(name: str, data: bytes) -> Maker:
    def make(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return make


def _folder(folder: Path) -> Path:
    path = folder / "a folder.png"
    path.mkdir()
    return path


def _broken_link(folder: Path) -> Path:
    path = folder / "link.png"
    path.symlink_to(folder / "gone.png")
    return path


CASES: list[tuple[str, Maker, str | None]] = [
    ("zero-byte", _write("empty.png", b""), "the file is empty"),
    ("truncated png", _truncated("PNG", "cut.png"), "truncated"),
    ("truncated jpeg", _truncated("JPEG", "cut.jpg"), "truncated"),
    ("text named .jpg", _write("notes.jpg", b"shopping list: eggs, milk\n"), "text file, not an image"),
    ("html named .jpg", _write("page.jpg", b"<!DOCTYPE html><html><body>x</body></html>"), "web page"),
    ("a directory", _folder, "is a folder, not an image"),
    ("decompression bomb", _bomb, "too large to open safely"),
    ("svg", _write("drawing.svg", b'<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"/>'), "SVG"),
    ("heic", _write("photo.heic", b"\0\0\0\x18ftypheic" + bytes(200)), "not an image format"),
    ("broken symlink", _broken_link, "link to a missing file"),
    ("1x1", lambda f: _save(Image.new("RGB", (1, 1), (200, 10, 10)), f / "dot.png", format="PNG"), None),
    ("cmyk jpeg", lambda f: _save(_noise().convert("CMYK"), f / "cmyk.jpg", format="JPEG"), None),
    (
        "16-bit png",
        lambda f: _save(Image.fromarray(np.full((40, 40), 40000, np.uint16)), f / "deep.png", format="PNG"),
        None,
    ),
    ("palette with transparency", _palette, None),
    ("gray with alpha", lambda f: _save(_noise().convert("LA"), f / "la.png", format="PNG"), None),
    ("exif orientation 6", _exif_rotated, None),
    ("animated gif", _animated, None),
    ("multi-page tiff", _multipage, None),
    ("spaces and non-ascii", lambda f: _save(_noise(), f / "mes photos é 写真.png", format="PNG"), None),
]

#: Loads, but is too thin to stylise at 512 px: refused when a run would start.
THIN = ("1x10000", lambda f: _save(Image.new("L", (1, 10000), 128), f / "thin.png", format="PNG"))

__all__ = ["CASES", "THIN", "Maker"]
