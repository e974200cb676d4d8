"""The preview: zoom (wheel, fit, 100 %), pan (drag), a before/after split, and painting regions.

In paint mode the left button paints (strokes are sent in the picture's
relative coordinates, 0 to 1) and the right button pans; the regions and the
style map are drawn over the picture.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPaintEvent, QPen, QPixmap, QResizeEvent, QWheelEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

_MIN_ZOOM, _MAX_ZOOM = 0.05, 16.0
#: The before/after handle's radius, in pixels.
_HANDLE_RADIUS = 12


class ImageView(QWidget):
    """Shows the current image; optionally the "before" image left of a draggable split line.

    The "before" image is stretched over the same rectangle as the current
    one, so the two line up even when the preview is smaller than the result.
    """

    zoomChanged = Signal(float)
    strokeStarted = Signal(QPointF)
    strokeMoved = Signal(QPointF)
    strokeEnded = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(240, 180)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._image = QPixmap()
        self._before = QPixmap()
        self._logical_size: tuple[int, int] | None = None
        self._zoom = 1.0
        self._fit = True
        self._offset = QPointF(0, 0)
        self._split_enabled = False
        self._split = 0.5
        self._drag_start: QPointF | None = None
        self._dragging_split = False
        self._placeholder = "Press Start (Ctrl+Enter) to stylise the content image"
        self._overlays: dict[str, QImage] = {}
        self._painting = False
        self._stroking = False
        self._brush = 0.0  # radius as a share of the picture's width
        self._pointer: QPointF | None = None

    # -- overlays and painting -----------------------------------------------------

    def set_overlay(self, name: str, image: QImage | None) -> None:
        """Draw ``image`` stretched over the picture (``name``: "regions", "style map"); None removes it."""
        if image is None:
            self._overlays.pop(name, None)
        else:
            self._overlays[name] = image
        self.update()

    def overlay(self, name: str) -> QImage | None:
        return self._overlays.get(name)

    def set_painting(self, on: bool) -> None:
        """Paint mode: the left button paints, the right button pans."""
        self._painting = on
        self._stroking = False
        self.setCursor(Qt.CursorShape.CrossCursor if on else Qt.CursorShape.OpenHandCursor)
        self.update()

    def painting(self) -> bool:
        return self._painting

    def set_brush(self, radius: float) -> None:
        """The brush's radius as a share of the picture's width (drawn around the pointer)."""
        self._brush = radius
        self.update()

    def to_relative(self, point: QPointF) -> QPointF:
        """A widget position in the picture's relative coordinates (0 to 1 over the picture)."""
        width, height = self._size()
        image = self._to_image(point)
        return QPointF(image.x() / max(width, 1.0), image.y() / max(height, 1.0))

    # -- content -----------------------------------------------------------

    def set_image(self, image: QImage | QPixmap, logical_size: tuple[int, int] | None = None) -> None:
        """Show ``image``; ``logical_size`` is the result's full size when ``image`` is a smaller preview."""
        self._image = image if isinstance(image, QPixmap) else QPixmap.fromImage(image)
        self._logical_size = logical_size
        if self._fit:
            self._apply_fit()
        self.update()

    def set_before(self, image: QImage | QPixmap | None) -> None:
        if image is None:
            self._before = QPixmap()
        else:
            self._before = image if isinstance(image, QPixmap) else QPixmap.fromImage(image)
        self.update()

    # -- split ---------------------------------------------------------------

    def set_split(self, enabled: bool) -> None:
        self._split_enabled = enabled
        self.update()

    def split_enabled(self) -> bool:
        return self._split_enabled

    # -- zoom ------------------------------------------------------------------

    def zoom(self) -> float:
        return self._zoom

    def fits(self) -> bool:
        return self._fit

    def _size(self) -> tuple[float, float]:
        if self._logical_size:
            return float(self._logical_size[0]), float(self._logical_size[1])
        return float(self._image.width()), float(self._image.height())

    def fit(self) -> None:
        self._fit = True
        self._apply_fit()
        self.update()

    def _apply_fit(self) -> None:
        width, height = self._size()
        if width <= 0 or height <= 0:
            return
        self._set_zoom(min(self.width() / width, self.height() / height, _MAX_ZOOM))  # small pictures enlarged too
        self._offset = QPointF(0, 0)

    def actual_size(self) -> None:
        self._fit = False
        self._set_zoom(1.0)
        self._offset = QPointF(0, 0)
        self.update()

    def zoom_by(self, factor: float, anchor: QPointF | None = None) -> None:
        self._fit = False
        anchor = anchor or QPointF(self.width() / 2, self.height() / 2)
        before = self._to_image(anchor)
        self._set_zoom(min(max(self._zoom * factor, _MIN_ZOOM), _MAX_ZOOM))
        after = self._to_image(anchor)
        self._offset += (after - before) * self._zoom
        self.update()

    def _set_zoom(self, zoom: float) -> None:
        if zoom != self._zoom:
            self._zoom = zoom
            self.zoomChanged.emit(zoom)

    def _target(self) -> QRectF:
        width, height = self._size()
        w, h = width * self._zoom, height * self._zoom
        return QRectF((self.width() - w) / 2 + self._offset.x(), (self.height() - h) / 2 + self._offset.y(), w, h)

    def _to_image(self, point: QPointF) -> QPointF:
        target = self._target()
        return QPointF((point.x() - target.x()) / self._zoom, (point.y() - target.y()) / self._zoom)

    # -- events ------------------------------------------------------------------

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        if self._fit:
            self._apply_fit()
        super().resizeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.fillRect(self.rect(), self.palette().window().color().darker(115))
        if self._image.isNull():
            painter.setPen(self.palette().text().color())
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, self._placeholder)
            return
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, self._zoom < 2)
        target = self._target()
        painter.drawPixmap(target, self._image, QRectF(self._image.rect()))
        if self._split_enabled and not self._before.isNull():
            split_x = target.x() + target.width() * self._split
            painter.save()
            painter.setClipRect(QRectF(target.x(), target.y(), split_x - target.x(), target.height()))
            painter.drawPixmap(target, self._before, QRectF(self._before.rect()))
            painter.restore()
            self._draw_split(painter, target, split_x)
        for overlay in self._overlays.values():
            painter.drawImage(target, overlay, QRectF(overlay.rect()))
        if self._painting and self._pointer is not None and self._brush > 0:
            radius = self._brush * target.width()
            painter.setPen(QPen(QColor(255, 255, 255, 230), 1.5))
            painter.drawEllipse(self._pointer, radius, radius)
            painter.setPen(QPen(QColor(0, 0, 0, 160), 1))
            painter.drawEllipse(self._pointer, radius + 1.5, radius + 1.5)

    def _draw_split(self, painter: QPainter, target: QRectF, split_x: float) -> None:
        """The split's line with a handle to drag at its middle, and "Before" and "After" beside it: outside the
        picture, above or below it, where there is room; over its edge, on a dark plate, where there is none."""
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(QPen(QColor(255, 255, 255, 220), 2))
        painter.drawLine(QPointF(split_x, target.top()), QPointF(split_x, target.bottom()))
        middle = QPointF(split_x, target.center().y())
        painter.setPen(QPen(QColor(0, 0, 0, 140), 1))
        painter.setBrush(QColor(255, 255, 255, 235))
        painter.drawEllipse(middle, _HANDLE_RADIUS, _HANDLE_RADIUS)
        painter.setPen(QColor(40, 40, 40))
        painter.drawText(QRectF(middle.x() - _HANDLE_RADIUS, middle.y() - _HANDLE_RADIUS, 2 * _HANDLE_RADIUS,
                                2 * _HANDLE_RADIUS), Qt.AlignmentFlag.AlignCenter, "◂▸")  # fmt: skip
        metrics = painter.fontMetrics()
        height = metrics.height() + 4
        if target.top() >= height + 2:
            top, plate = target.top() - height - 2, False
        elif self.height() - target.bottom() >= height + 2:
            top, plate = target.bottom() + 2, False
        else:
            top, plate = max(0.0, target.top()) + 4, True
        for text, right in (("Before", True), ("After", False)):
            width = metrics.horizontalAdvance(text) + 10
            left = split_x - 6 - width if right else split_x + 6
            box = QRectF(left, top, width, height)
            if plate:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QColor(0, 0, 0, 150))
                painter.drawRoundedRect(box, 4, 4)
                painter.setPen(QColor(255, 255, 255))
            else:
                painter.setPen(self.palette().text().color())
            painter.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
        painter.setBrush(Qt.BrushStyle.NoBrush)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt override
        steps = event.angleDelta().y() / 120
        if steps:
            self.zoom_by(1.25**steps, event.position())
        event.accept()

    def _near_split(self, point: QPointF) -> bool:
        if not (self._split_enabled and not self._before.isNull()):
            return False
        target = self._target()
        split_x = target.x() + target.width() * self._split
        on_handle = abs(point.y() - target.center().y()) <= _HANDLE_RADIUS
        return abs(point.x() - split_x) < (_HANDLE_RADIUS if on_handle else 8)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if self._painting and not self._image.isNull():
            if event.button() == Qt.MouseButton.LeftButton:
                self._stroking = True
                self.strokeStarted.emit(self.to_relative(event.position()))
            elif event.button() == Qt.MouseButton.RightButton:
                self._drag_start = event.position()
            return
        if event.button() == Qt.MouseButton.LeftButton:
            if self._near_split(event.position()):
                self._dragging_split = True
            else:
                self._drag_start = event.position()
                self.setCursor(Qt.CursorShape.ClosedHandCursor)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        position = event.position()
        if self._painting:
            self._pointer = position
            if self._stroking:
                self.strokeMoved.emit(self.to_relative(position))
            elif self._drag_start is not None:
                self._fit = False
                self._offset += position - self._drag_start
                self._drag_start = position
            self.update()
            return
        if self._dragging_split:
            target = self._target()
            if target.width() > 0:
                self._split = min(max((position.x() - target.x()) / target.width(), 0.0), 1.0)
            self.update()
        elif self._drag_start is not None:
            self._fit = False
            self._offset += position - self._drag_start
            self._drag_start = position
            self.update()
        else:
            shape = Qt.CursorShape.SplitHCursor if self._near_split(position) else Qt.CursorShape.OpenHandCursor
            self.setCursor(shape)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if self._painting:
            if self._stroking and event.button() == Qt.MouseButton.LeftButton:
                self._stroking = False
                self.strokeEnded.emit()
            self._drag_start = None
            return
        self._drag_start = None
        self._dragging_split = False
        self.setCursor(Qt.CursorShape.OpenHandCursor)

    def leaveEvent(self, event: object) -> None:  # noqa: N802 - Qt override
        self._pointer = None
        self.update()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if self._painting:
            return
        if self._fit:
            self.actual_size()
        else:
            self.fit()
