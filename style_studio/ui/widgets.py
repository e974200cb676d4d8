"""Small widgets: weight sliders, sliders made from a value's description, and image drop zones."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject, QPropertyAnimation, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QDragEnterEvent, QDragLeaveEvent, QDropEvent, QMouseEvent, QPixmap, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QDoubleSpinBox,
    QFrame,
    QGraphicsOpacityEffect,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from superqt import QElidingLabel

from ..core import About, ImageLoadError
from .pictures import InputImage
from .qt_images import can_accept, images_from_mime, pil_to_qimage
from .state import BLEND_SHARE

_STEPS = 1000


class LogSlider(QWidget):
    """A slider over a logarithmic range with an editable number beside it.

    Zero is allowed: the spin box can be typed down to 0, and the slider's
    left end means 0. The number goes up to ``limit`` (default: the slider's
    ``maximum``); above its range the slider stays at its end.

    Signals:
        valueChanged(float)
    """

    valueChanged = Signal(float)

    def __init__(
        self,
        minimum: float,
        maximum: float,
        value: float,
        *,
        limit: float | None = None,
        decimals: int = 4,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._lo, self._hi = math.log10(minimum), math.log10(maximum)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, _STEPS)
        self.spin = QDoubleSpinBox()
        # The number takes every value the setting allows; the slider shows the end of its range beyond its own.
        self.spin.setRange(0.0, max(maximum, limit if limit is not None else maximum))
        self.spin.setDecimals(decimals)
        self.spin.setStepType(QDoubleSpinBox.StepType.AdaptiveDecimalStepType)
        self.spin.setKeyboardTracking(False)
        self.spin.setMinimumWidth(84)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.spin)
        self.slider.valueChanged.connect(self._from_slider)
        self.spin.valueChanged.connect(self._from_spin)
        self._updating = False
        self.setValue(value)

    def value(self) -> float:
        return self.spin.value()

    def setValue(self, value: float) -> None:  # noqa: N802 - Qt naming
        self._updating = True
        try:
            self.spin.setValue(value)
            self.slider.setValue(self._position(value))
        finally:
            self._updating = False

    def _position(self, value: float) -> int:
        if value <= 0:
            return 0
        fraction = (math.log10(value) - self._lo) / (self._hi - self._lo)
        return round(min(max(fraction, 0.0), 1.0) * _STEPS)

    def _from_slider(self, position: int) -> None:
        if self._updating:
            return
        value = 0.0 if position == 0 else 10 ** (self._lo + (self._hi - self._lo) * position / _STEPS)
        value = float(f"{value:.3g}")
        self._updating = True
        try:
            self.spin.setValue(value)
        finally:
            self._updating = False
        self.valueChanged.emit(self.spin.value())

    def _from_spin(self, value: float) -> None:
        if self._updating:
            return
        self._updating = True
        try:
            self.slider.setValue(self._position(value))
        finally:
            self._updating = False
        self.valueChanged.emit(value)


class LayerSlider(QWidget):
    """One style layer's weight, with its name, a patch of the style as much of it as the layer sees
    (``show_patch``), and its number. The slider moves over its ``About``'s ``slider`` range in its ``step``s; the
    number shows any weight the setting allows (a preset's 1000 too, the slider then at its end)."""

    #: The patch's side on screen, in pixels.
    PATCH = 22

    valueChanged = Signal(str, float)

    def __init__(self, layer: str, value: float, about: About, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layer = layer
        self._step = about.step
        self._top = about.slider[1] if about.slider is not None else 5.0
        self.label = QLabel(layer)
        self.label.setMinimumWidth(56)
        self.patch = QLabel()
        self.patch.setFixedSize(self.PATCH, self.PATCH)
        self.patch.setFrameShape(QFrame.Shape.Box)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, round(self._top / self._step))
        self.number = QLabel()
        self.number.setMinimumWidth(34)
        self.number.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.patch)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.number)
        self.slider.valueChanged.connect(self._changed)
        self._value = value
        self.setValue(value)

    def value(self) -> float:
        return self._value

    def setValue(self, value: float) -> None:  # noqa: N802 - Qt naming
        """Show ``value``: the number says it, the slider stands at it or, beyond its range, at its end."""
        self._value = value
        blocked = self.slider.blockSignals(True)
        self.slider.setValue(round(min(max(value, 0.0), self._top) / self._step))
        self.slider.blockSignals(blocked)
        self._show()

    def show_patch(self, patch: QPixmap | None, tip: str) -> None:
        """Show what this layer carries: a patch of the style as large as the layer sees (None: no style yet)."""
        if patch is None:
            self.patch.clear()
        else:
            self.patch.setPixmap(patch.scaled(self.PATCH - 2, self.PATCH - 2))
        self.setToolTip(tip)

    def _show(self) -> None:
        self.number.setText(f"{self._value:.2f}" if self._value < 1000 else f"{self._value:.3g}")
        self.label.setEnabled(self._value > 0)

    def _changed(self, position: int) -> None:
        self._value = round(position * self._step, 6)
        self._show()
        self.valueChanged.emit(self.layer, self._value)


class ImageDropZone(QFrame):
    """Shows an image's thumbnail, name and size; accepts drops of files or image data.

    Signals:
        imagesDropped(list): InputImage objects from a drop.
        refused(str): why a drop was refused (the previous image stays).
    """

    imagesDropped = Signal(list)
    refused = Signal(str)
    clicked = Signal()

    def __init__(self, placeholder: str, parent: QWidget | None = None, *, thumb: int = 150) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName("dropZone")
        self._thumb = thumb
        self.picture = QLabel(placeholder)
        self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.picture.setMinimumSize(QSize(thumb, int(thumb * 0.66)))
        self.picture.setWordWrap(True)
        self.picture.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.caption = QElidingLabel("")
        self.caption.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.picture, 1)
        layout.addWidget(self.caption)
        self._placeholder = placeholder
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def show_image(self, item: InputImage | None) -> None:
        if item is None:
            self.picture.setPixmap(QPixmap())
            self.picture.setText(self._placeholder)
            self.caption.setText("")
            self.setToolTip("")
            return
        pixmap = QPixmap.fromImage(pil_to_qimage(item.image))
        self.picture.setPixmap(
            pixmap.scaled(
                self._thumb, self._thumb, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation
            )
        )
        self.caption.setText(f"{item.name}\n{item.size_text}")  # two lines: the name, then its size (and frame)
        self.setToolTip(str(item.path) if item.path else item.name)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
        super().mousePressEvent(event)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if can_accept(event.mimeData()):
            event.acceptProposedAction()
            self.setProperty("hover", True)
            self.style().polish(self)

    def dragLeaveEvent(self, event: QDragLeaveEvent) -> None:  # noqa: N802 - Qt override
        self.setProperty("hover", False)
        self.style().polish(self)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        self.setProperty("hover", False)
        self.style().polish(self)
        try:
            images = images_from_mime(event.mimeData())
        except ImageLoadError as exc:
            self.refused.emit(str(exc))
            event.ignore()
            return
        event.acceptProposedAction()
        self.imagesDropped.emit(images)


class StyleRow(QWidget):
    """A style image in the list: thumbnail, name and size, blend weight, remove button."""

    blendChanged = Signal()
    removeRequested = Signal(object)

    def __init__(self, item: InputImage, blend: float = 1.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.item = item
        thumb = QLabel()
        thumb.setPixmap(
            QPixmap.fromImage(pil_to_qimage(item.image)).scaled(
                56, 56, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation
            )
        )
        thumb.setFixedSize(58, 58)
        thumb.setAlignment(Qt.AlignmentFlag.AlignCenter)
        name = self.name_label = QElidingLabel(item.name)  # alone on its line: the size goes below
        name.setToolTip(str(item.path) if item.path else item.name)
        size = QLabel(item.size_text)
        size.setEnabled(False)  # drawn quieter than the name
        self.blend = stepped_slider(BLEND_SHARE)
        self.blend.setValue(slider_position(blend, BLEND_SHARE))
        self.blend.setAccessibleName(f"Blend weight of {item.name}")
        self.blend_label = QLabel()
        self.blend_label.setMinimumWidth(34)
        remove = QToolButton()
        remove.setText("✕")
        remove.setToolTip(f"Remove {item.name} from the styles")
        remove.setAccessibleName(f"Remove style {item.name}")
        remove.clicked.connect(lambda: self.removeRequested.emit(self))
        self.remove_button = remove
        text = QVBoxLayout()
        text.setSpacing(2)
        text.addWidget(name)
        text.addWidget(size)
        blend_row = QHBoxLayout()
        blend_row.addWidget(self.blend, 1)  # its tooltip says what it is: the slider gets the row's width
        blend_row.addWidget(self.blend_label)
        text.addLayout(blend_row)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(thumb)
        layout.addLayout(text, 1)
        layout.addWidget(remove, 0, Qt.AlignmentFlag.AlignTop)
        self.blend.valueChanged.connect(self._blend_changed)
        self._show_blend()
        wheel_scrolls_the_panel(self)

    def blend_weight(self) -> float:
        return slider_value(self.blend.value(), BLEND_SHARE)

    def set_blend_weight(self, weight: float) -> None:
        """Show ``weight`` (0 to 1) on the slider; emits ``blendChanged`` when it moves."""
        self.blend.setValue(slider_position(weight, BLEND_SHARE))

    def _show_blend(self) -> None:
        self.blend_label.setText(f"{self.blend_weight():.2f}")

    def _blend_changed(self, _: int) -> None:
        self._show_blend()
        self.blendChanged.emit()


class WrappedLabel(QLabel):
    """A label whose words wrap, as tall as its lines are at the width it has (a form's row otherwise keeps the
    height of one width and cuts the lines off, as the run's needs were)."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        height = self.heightForWidth(self.width()) if self.text() else 0
        if height != self.minimumHeight():
            self.setMinimumHeight(max(height, 0))


class MessageBanner(QFrame):
    """A dismissable line over the top of the picture for errors and notices (never a modal box).

    It lies over the picture (``overlay``) rather than pushing it down. A notice fades after ``NOTICE_SECONDS``;
    an error, or a message with buttons, stays until it is dismissed, answered or ``clear``ed.
    """

    #: How long a notice stays before it fades.
    NOTICE_SECONDS = 6.0
    _FADE_MS = 600

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.kind = "info"
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.addWidget(self.label, 1)
        self._actions = QHBoxLayout()
        layout.addLayout(self._actions)
        layout.addWidget(close)
        self.buttons: list[QPushButton] = []
        self._opacity = QGraphicsOpacityEffect(self)
        self._opacity.setOpacity(1.0)
        self.setGraphicsEffect(self._opacity)
        self._fade = QPropertyAnimation(self._opacity, b"opacity", self)
        self._fade.setDuration(self._FADE_MS)
        self._fade.setStartValue(1.0)
        self._fade.setEndValue(0.0)
        self._fade.finished.connect(self.hide)
        self._linger = QTimer(self)
        self._linger.setSingleShot(True)
        self._linger.timeout.connect(self._fade.start)
        self.hide()

    def overlay(self, widget: QWidget) -> None:
        """Lie over the top of ``widget``, as wide as it less a margin, following its size."""
        self.setParent(widget)
        widget.installEventFilter(self)
        self._place()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.parentWidget() and event.type() == QEvent.Type.Resize:
            self._place()
        return False

    def _place(self) -> None:
        host = self.parentWidget()
        if host is None:
            return
        width = max(0, host.width() - 2 * _BANNER_MARGIN)
        self.setGeometry(_BANNER_MARGIN, _BANNER_MARGIN, width, self.heightForWidth(width))

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        layout = self.layout()
        height = layout.totalHeightForWidth(width) if layout is not None else -1
        return max(height, self.sizeHint().height())

    def show_message(
        self, text: str, kind: str = "error", actions: Sequence[tuple[str, Callable[[], None]]] = ()
    ) -> None:
        """Show ``text``; each action is a button that runs its function and dismisses the banner."""
        for button in self.buttons:
            self._actions.removeWidget(button)
            button.deleteLater()
        self.buttons = []
        for label, act in actions:
            button = QPushButton(label)
            button.clicked.connect(self.hide)
            button.clicked.connect(act)
            self._actions.addWidget(button)
            self.buttons.append(button)
        colors = {"error": ("#fdecea", "#8a1c12"), "info": ("#e8f1fb", "#123f6b")}
        background, foreground = colors.get(kind, colors["info"])
        self.setStyleSheet(
            f"#banner {{ background: {background}; border: 1px solid {foreground}; border-radius: 4px; }} "
            f"#banner QLabel {{ color: {foreground}; }}"
        )
        self.label.setText(text)
        self.kind = kind
        self._fade.stop()
        self._linger.stop()
        self._opacity.setOpacity(1.0)
        self.show()
        self.raise_()
        self._place()
        if kind != "error" and not actions:
            self._linger.start(round(self.NOTICE_SECONDS * 1000))

    def clear(self) -> None:
        """Take a notice or an error away (the user went on to something else: a new photo or clip); a question,
        a message with buttons, stays for its answer."""
        if self.buttons and not self.isHidden():
            return
        self._linger.stop()
        self._fade.stop()
        self.hide()

    def clear_error(self) -> None:
        """The user acted (a command, a setting moved): an error shown before goes; a notice fades on its own."""
        if self.kind == "error" and not self.buttons and not self.isHidden():
            self.clear()

    def text(self) -> str:
        return "" if self.isHidden() else self.label.text()


#: The space between the banner and the picture's edges.
_BANNER_MARGIN = 8


#: The largest value a QSpinBox holds.
SPIN_MAX = 2**31 - 1


def bounded(spin: QSpinBox | QDoubleSpinBox, about: About, scale: float = 1.0) -> None:
    """Give ``spin`` the range and tooltip ``about`` describes (shown ``scale`` times larger, e.g. 100 for %);
    a setting where 0 means something (``about.zero``) shows it at 0 ("Auto")."""
    low = 0.0 if about.zero is not None else (about.low or 0.0) * scale
    high = (about.high if about.high is not None else SPIN_MAX) * scale
    if isinstance(spin, QSpinBox):
        spin.setRange(round(low), min(round(high), SPIN_MAX))
    else:
        spin.setRange(low, high)
    if about.zero is not None:
        spin.setSpecialValueText(about.zero.capitalize() if about.zero != "automatic" else "Auto")
    spin.setToolTip(about.tooltip)


def stepped_slider(about: About) -> QSlider:
    """A slider over the range ``about`` describes, a position a step (``about.step``): a share from 0 to 1 in
    steps of 0.01 is positions 0 to 100; its tooltip is ``about``'s.

    Raises:
        ValueError: ``about`` gives no upper bound (a slider has two ends).
    """
    if about.high is None:
        raise ValueError(f"a slider needs a range: {about.help!r} has no upper bound")
    slider = QSlider(Qt.Orientation.Horizontal)
    slider.setRange(slider_position(about.low or 0.0, about), slider_position(about.high, about))
    slider.setToolTip(about.tooltip)
    return slider


def slider_position(value: float, about: About) -> int:
    """Where ``value`` stands on a ``stepped_slider`` of ``about``."""
    return round(value * _per_unit(about)) if about.step < 1 else round(value / about.step)


def slider_value(position: int, about: About) -> float:
    """The value a ``stepped_slider`` of ``about`` at ``position`` shows."""
    # A step under 1 divides (25 / 100 is 0.25; 25 * 0.01 is 0.25000000000000006).
    return position / _per_unit(about) if about.step < 1 else position * about.step


def _per_unit(about: About) -> int:
    return round(1 / about.step)


class _WheelScrollsThePanel(QObject):
    """Lets the wheel over a number, choice or slider the user has not clicked scroll the panel it is in, rather
    than change the value under the pointer on the way down (Qt's default, a known surprise)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt naming
        if event.type() == QEvent.Type.Wheel and isinstance(watched, QWidget) and not watched.hasFocus():
            event.ignore()  # ignored, it goes on to the parents: the scroll area scrolls
            return True
        return False


_WHEEL_GUARD = _WheelScrollsThePanel()


def wheel_scrolls_the_panel(root: QWidget) -> None:
    """Every spin box, choice and slider in ``root`` takes the wheel only once clicked (or tabbed to)."""
    for widget in root.findChildren(QWidget):
        if isinstance(widget, (QAbstractSpinBox, QComboBox, QAbstractSlider)):
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            widget.installEventFilter(_WHEEL_GUARD)
