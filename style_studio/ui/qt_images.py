"""Between Pillow / numpy images and Qt's QImage, and images out of drops and the clipboard."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QUrl
from PySide6.QtGui import QImage

from ..core import ImageLoadError, decode_image
from .pictures import InputImage


def array_to_qimage(array: np.ndarray) -> QImage:
    """(H, W, 3) uint8 -> a QImage that owns its pixels (safe to send across threads)."""
    array = np.ascontiguousarray(array)
    height, width, _ = array.shape
    image = QImage(array.data, width, height, 3 * width, QImage.Format.Format_RGB888)
    return image.copy()  # the QImage above only borrows numpy's buffer


def pil_to_qimage(image: Image.Image) -> QImage:
    return array_to_qimage(np.asarray(image.convert("RGB")))


def qimage_to_png(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stub says bytes; the binding takes str
    buffer.close()
    return bytes(data.data())


def images_from_mime(mime: QMimeData | None, what: str = "dropped image", source: str = "the drop") -> list[InputImage]:
    """The images a drop or a paste carries: local files first, else image data.

    ``what`` names image data that comes without a file; ``source`` is where
    it came from, for the message when there is nothing usable.

    Raises:
        ImageLoadError: nothing usable; the message says why (a bad file, a
            web address, or no image at all).
    """
    if mime is None:
        raise ImageLoadError(f"there is no image on {source}")
    urls: list[QUrl] = list(mime.urls()) if mime.hasUrls() else []
    local = [Path(u.toLocalFile()) for u in urls if u.isLocalFile()]
    if local:
        return [InputImage.from_file(p) for p in local]
    if mime.hasImage():
        data = mime.imageData()
        if isinstance(data, QImage) and not data.isNull():
            return [InputImage(decode_image(qimage_to_png(data), what), what)]
    for fmt in ("image/png", "image/jpeg", "image/webp", "image/bmp", "image/gif", "image/tiff"):
        if mime.hasFormat(fmt):
            return [InputImage(decode_image(bytes(mime.data(fmt).data()), what), what)]
    if urls:
        raise ImageLoadError(
            f"{urls[0].toString()}: web addresses cannot be opened directly; drag the picture itself, "
            "or save it and open the file"
        )
    raise ImageLoadError(f"there is no image on {source}")


def can_accept(mime: QMimeData) -> bool:
    return (
        mime.hasUrls()
        or mime.hasImage()
        or any(mime.hasFormat(f) for f in ("image/png", "image/jpeg", "image/webp", "image/bmp"))
    )


__all__ = [
    "ImageLoadError",
    "array_to_qimage",
    "can_accept",
    "images_from_mime",
    "pil_to_qimage",
    "qimage_to_png",
]
