"""Render the app icon from resources/icons/style-studio.svg into every size the platforms want.

Writes, under resources/icons/: hicolor/<N>x<N>/apps/<app id>.png for the
Linux icon theme (and the window icon), style-studio.ico (Windows) and
style-studio.icns (macOS). These files are generated: edit the SVG and run

    .venv/bin/python packaging/make_icons.py

Rendering uses Qt's SVG renderer (PySide6, already a dependency); the .ico
and .icns containers are written by Pillow.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PIL import Image  # noqa: E402
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

from style_studio import APP_ID  # noqa: E402

SVG = ROOT / "resources" / "icons" / "style-studio.svg"
ICONS = ROOT / "resources" / "icons"
SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)


def render(size: int) -> Image.Image:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    QSvgRenderer(str(SVG)).render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return Image.open(io.BytesIO(bytes(data.data()))).convert("RGBA")


def main() -> None:
    QGuiApplication.instance() or QGuiApplication([])
    rendered = {size: render(size) for size in SIZES}
    for size, image in rendered.items():
        target = ICONS / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        image.save(target, optimize=True)
    rendered[256].save(ICONS / "style-studio.ico", sizes=[(s, s) for s in (16, 24, 32, 48, 64, 128, 256)])
    rendered[512].save(ICONS / "style-studio.icns")
    print(f"wrote {len(SIZES)} PNG sizes, style-studio.ico and style-studio.icns under {ICONS}")


if __name__ == "__main__":
    main()
