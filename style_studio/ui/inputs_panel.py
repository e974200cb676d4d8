"""The inputs: a content photo and one or more style images, by drop, paste or file dialog."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QLabel,
    QScrollArea,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from ..core import ImageLoadError, VideoOptions
from ..resources import DEFAULT_CONTENT, DEFAULT_STYLE, resources_dir, sample
from .pictures import ClipFrameRef, InputImage
from .qt_images import images_from_mime
from .settings_form import FormBinding, controls_for
from .state import WindowState
from .widgets import ImageDropZone, StyleRow, wheel_scrolls_the_panel

log = logging.getLogger(__name__)

IMAGE_FILTER = (
    "Images and videos (*.png *.jpg *.jpeg *.webp *.tif *.tiff *.bmp *.gif *.mp4 *.mov *.m4v *.mkv *.webm *.avi);;"
    "All files (*)"
)


class VideoOptionsBox(QWidget):
    """How Render video makes the frames after the first (their iterations, how closely each follows the last):
    a form made from ``VideoOptions``' descriptions, bound both ways to ``state.video``.

    Attributes:
        fields: each option's control, by name.
    """

    def __init__(self, state: WindowState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fields = controls_for(VideoOptions, {})
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        for control in self.fields.values():
            control.add_to(form)
        binding = FormBinding(self.fields, state.set_video)
        state.video_changed.connect(binding.show)
        for name in self.fields:
            binding.show(name, getattr(state.video, name))
        wheel_scrolls_the_panel(self)


class InputsPanel(QScrollArea):
    """The content drop zone, the style list and the style drop zone.

    Args:
        state: where the photo and the styles go (its ``photo_changed`` and ``styles_changed`` say so), and the
            styles' blend (``style_blend``: the rows' sliders write it, and show it when a document sets it); its
            settings refuse an image too thin to stylise.

    Signals:
        error(str): an input was refused; the message says why.
    """

    error = Signal(str)

    def __init__(self, state: WindowState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.style_rows: list[StyleRow] = []
        self._showing_blend = False
        state.setting_changed.connect(self._show_blend)
        state.photo_changed.connect(self._show_photo)
        state.styles_changed.connect(self._show_styles)
        self.content_zone = ImageDropZone("Drop a photo here\nor click to open one (Ctrl+O)")
        self.content_zone.setToolTip("The content image (or a video): the picture to repaint")
        self.frame_slider = QSlider(Qt.Orientation.Horizontal)
        self.frame_slider.setToolTip(
            "The video's frame the preview and the sliders work on (Render video styles them all)"
        )
        self.frame_label = QLabel()
        self.video_options = VideoOptionsBox(state)
        for part in (self.frame_slider, self.frame_label, self.video_options):
            part.hide()
        self._frame_timer = QTimer(self)
        self._frame_timer.setSingleShot(True)
        self._frame_timer.setInterval(150)  # the frame is decoded once the slider rests
        self._frame_timer.timeout.connect(self._show_chosen_frame)
        self.frame_slider.valueChanged.connect(self._frame_moved)
        self.style_zone = ImageDropZone("Drop style images here\nor click to add one (Ctrl+Shift+O)", thumb=90)
        self.style_zone.setToolTip("Style images: paintings or textures whose look the picture takes on")
        self._styles_box = QVBoxLayout()
        self._styles_box.setSpacing(2)
        inner = QWidget()
        layout = QVBoxLayout(inner)
        layout.addWidget(QLabel("<b>Content</b>"))
        layout.addWidget(self.content_zone)
        layout.addWidget(self.frame_slider)
        layout.addWidget(self.frame_label)
        layout.addWidget(self.video_options)
        layout.addWidget(QLabel("<b>Styles</b>"))
        layout.addLayout(self._styles_box)
        layout.addWidget(self.style_zone)
        layout.addStretch(1)
        self.setWidgetResizable(True)
        self.setWidget(inner)
        self.setMinimumWidth(230)
        self.content_zone.imagesDropped.connect(lambda items: self.use_as_content(items[0]))
        self.content_zone.refused.connect(self.error)
        self.content_zone.clicked.connect(self.open_content)
        self.style_zone.imagesDropped.connect(self._use_as_styles)
        self.style_zone.refused.connect(self.error)
        self.style_zone.clicked.connect(self.add_style_dialog)

    @property
    def content(self) -> InputImage | None:
        """The photo (the state's)."""
        return self.state.photo

    def load_initial(self, content: Path | None, styles: Sequence[Path], *, given: bool) -> None:
        """Open ``content`` and ``styles``, falling back to the bundled samples for what fails.

        ``given``: the user named these files (a failure is shown, not just logged).
        """
        content = content or sample(*DEFAULT_CONTENT)
        styles = list(styles) or [sample(*DEFAULT_STYLE)]
        for path, add in [(content, self.set_content)] + [(p, self.add_style) for p in styles]:
            try:
                add(InputImage.from_file(path))
            except ImageLoadError as exc:
                if given:
                    self.error.emit(str(exc))
                log.warning("could not open %s: %s", path, exc)
        if self.content is None:
            self.set_content(InputImage.from_file(sample(*DEFAULT_CONTENT)))
        if not self.style_rows:
            self.add_style(InputImage.from_file(sample(*DEFAULT_STYLE)))

    # -- taking an image ----------------------------------------------------------

    def _fits(self, item: InputImage, role: str) -> bool:
        """Refuse, with a message, an image the state refuses (a video as a style, one too thin to stylise)."""
        refusal = self.state.refusal(item, role)
        if refusal is not None:
            self.error.emit(refusal)
        return refusal is None

    def use_as_content(self, item: InputImage) -> None:
        """The user gave a content image (drop, paste, Open): check it, then use it."""
        if self._fits(item, "content"):
            self.set_content(item)

    def _use_as_styles(self, items: list[InputImage]) -> None:
        for item in items:
            self.use_as_style(item)

    def use_as_style(self, item: InputImage) -> None:
        if self._fits(item, "style"):
            self.add_style(item)

    def set_content(self, item: InputImage) -> None:
        self.state.set_photo(item)

    def _show_photo(self, item: InputImage | None) -> None:
        """The state's photo changed: its drop zone shows it, and a clip's frame slider and options show."""
        if item is None:
            return
        self.content_zone.show_image(item)
        clip = item.clip
        for part in (self.frame_slider, self.frame_label, self.video_options):
            part.setVisible(clip is not None)
        if clip is not None:
            self.frame_slider.blockSignals(True)
            self.frame_slider.setRange(0, max(0, clip.frames - 1))
            self.frame_slider.setValue(clip.frame)
            self.frame_slider.blockSignals(False)
            self._show_frame_number(clip.frame, clip)

    # -- a video's frames -------------------------------------------------------------

    def _frame_moved(self, frame: int) -> None:
        if self.content is not None and self.content.clip is not None:
            self.frame_label.setText(f"Frame {frame + 1} of {self.content.clip.frames}")
        self._frame_timer.start()

    def _show_chosen_frame(self) -> None:
        content = self.content
        if content is None or content.clip is None or content.path is None:
            return
        if self.frame_slider.value() != content.clip.frame:
            self._load_file(content.path, self.set_content, frame=self.frame_slider.value())

    def follow_frame(self, frame: int) -> None:
        """Move the frame slider to ``frame`` (a clip playing) without making it the content."""
        content = self.content
        if content is None or content.clip is None:
            return
        self.frame_slider.blockSignals(True)
        self.frame_slider.setValue(frame)
        self.frame_slider.blockSignals(False)
        self._show_frame_number(frame, content.clip)

    def _show_frame_number(self, frame: int, clip: ClipFrameRef) -> None:
        self.frame_label.setText(f"Frame {frame + 1} of {clip.frames} ({frame / clip.rate:.2f} s)")

    def show_frame(self, frame: int) -> None:
        """Make frame ``frame`` (from 0) of the video the content, as moving the slider there does."""
        self.frame_slider.setValue(frame)
        self._frame_timer.stop()
        self._show_chosen_frame()

    def add_style(self, item: InputImage) -> None:
        self.state.set_styles((*self.state.styles, item))

    def remove_style(self, row: StyleRow) -> None:
        self.state.set_styles(tuple(style for style in self.state.styles if style is not row.item))

    def _show_styles(self, styles: tuple[InputImage, ...]) -> None:
        """The state's styles changed: a row for each, in their order (a row kept keeps its blend); the rows'
        blend goes into the settings."""
        rows = {id(row.item): row for row in self.style_rows}
        for row in self.style_rows:
            self._styles_box.removeWidget(row)  # put back below in the styles' order, if still one
            if not any(row.item is style for style in styles):
                row.deleteLater()
        self.style_rows = []
        for position, style in enumerate(styles):
            kept = rows.get(id(style))
            row = kept if kept is not None else self._new_row(style)
            self._styles_box.insertWidget(position, row)
            self.style_rows.append(row)
        self._write_blend()

    def _new_row(self, style: InputImage) -> StyleRow:
        row = StyleRow(style)
        row.blendChanged.connect(self._write_blend)
        row.removeRequested.connect(self.remove_style)
        return row

    # -- blend weights --------------------------------------------------------------

    def blend(self) -> tuple[float, ...]:
        """The styles' blend weights as the settings keep them: empty when all are equal."""
        blend = tuple(row.blend_weight() for row in self.style_rows)
        if blend and len(set(blend)) == 1 and blend[0] > 0:
            return ()
        return blend

    def _write_blend(self, *_: object) -> None:
        """A row's slider moved, or the rows changed: their blend goes into the settings."""
        if not self._showing_blend:
            self.state.set("style_blend", self.blend())

    def _show_blend(self, name: str, blend: object) -> None:
        """The settings' blend changed (a preset, Reset, a restored picture): the sliders show it, relative to its
        largest weight. A blend for another number of styles gives way to the rows' own."""
        if name != "style_blend" or blend == self.blend():
            return
        weights = tuple(blend) if isinstance(blend, tuple) else ()
        if weights and len(weights) != len(self.style_rows):
            self._write_blend()
            return
        top = max(weights, default=1.0) or 1.0
        self._showing_blend = True
        try:
            for row, weight in zip(self.style_rows, weights or (1.0,) * len(self.style_rows), strict=True):
                row.set_blend_weight(weight / top)
        finally:
            self._showing_blend = False

    # -- dialogs and the clipboard ----------------------------------------------------

    def open_content(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open content image", str(self.state.open_dir()), IMAGE_FILTER)
        if path:
            self._load_file(path, self.use_as_content)

    def add_style_dialog(self) -> None:
        start = str(resources_dir() / "samples" / "style")
        paths, _ = QFileDialog.getOpenFileNames(self, "Add style images", start, IMAGE_FILTER)
        for path in paths:
            self._load_file(path, self.use_as_style)

    def _load_file(self, path: str | Path, use: Callable[[InputImage], None], frame: int = 0) -> None:
        try:
            use(InputImage.from_clip(Path(path), frame) if frame else InputImage.from_file(path))
        except ImageLoadError as exc:
            self.error.emit(str(exc))

    def _paste(self, what: str) -> list[InputImage]:
        """Images on the clipboard (image data, or copied files), named "pasted image"."""
        try:
            return images_from_mime(QGuiApplication.clipboard().mimeData(), "pasted image", "the clipboard")
        except ImageLoadError as exc:
            self.error.emit(f"Nothing to paste as {what}: {exc}")
            return []

    def paste_content(self) -> None:
        items = self._paste("content")
        if items:
            self.use_as_content(items[0])

    def paste_style(self) -> None:
        for item in self._paste("a style"):
            self.use_as_style(item)
