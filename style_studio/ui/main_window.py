"""The main window: inputs on the left, the picture in the middle, settings on the right."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from PIL import Image
from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QImage,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .. import APP_NAME, __version__
from ..core import settings as settings_mod
from ..core.errors import ImageLoadError, SettingsError, StyleStudioError
from ..core.imageio import FORMATS, check_image_fits, fit_size, read_metadata, save_image
from ..core.settings import Settings
from ..resources import DEFAULT_CONTENT, DEFAULT_STYLE, resources_dir, sample
from .controls import ControlsPanel
from .history import HistoryEntry, HistoryStrip
from .image_view import ImageView
from .loss_plot import LossPlot
from .qt_images import InputImage, can_accept, images_from_mime, pil_to_qimage
from .runner import RenderJob, RunController, RunOutcome
from .store import Store
from .weights_dialog import WEIGHTS_FILTER, WeightsDialog
from .widgets import ImageDropZone, StyleRow

log = logging.getLogger(__name__)

IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.webp *.tif *.tiff *.bmp *.gif);;All files (*)"
EXPORT_FILTERS = {
    "PNG image (*.png)": ".png",
    "JPEG image (*.jpg *.jpeg)": ".jpg",
    "WebP image (*.webp)": ".webp",
    "TIFF image (*.tif *.tiff)": ".tif",
}
PRESET_FILTER = "Style Studio preset (*.json);;All files (*)"


def describe_weights(choice: str) -> str:
    from ..core.weights import describe

    return describe(choice)


class MessageBanner(QFrame):
    """A dismissable line at the top of the window for errors and notices (never a modal box)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
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
        layout.addWidget(close)
        self.hide()

    def show_message(self, text: str, kind: str = "error") -> None:
        colors = {"error": ("#fdecea", "#8a1c12"), "info": ("#e8f1fb", "#123f6b")}
        background, foreground = colors.get(kind, colors["info"])
        self.setStyleSheet(
            f"#banner {{ background: {background}; border-radius: 4px; }} #banner QLabel {{ color: {foreground}; }}"
        )
        self.label.setText(text)
        self.kind = kind
        self.show()

    def text(self) -> str:
        return "" if self.isHidden() else self.label.text()


class MainWindow(QMainWindow):
    """Style Studio's window. ``store`` is injectable for tests."""

    exportFinished = Signal(str, str)  # path, error ("" when it worked)

    def __init__(
        self,
        store: Store | None = None,
        *,
        content: Path | None = None,
        styles: Sequence[Path] = (),
        load_defaults: bool = True,
    ) -> None:
        super().__init__()
        self.store = store or Store()
        self.setWindowTitle(APP_NAME)
        self.controller = RunController(self)
        self.content: InputImage | None = None
        self.style_rows: list[StyleRow] = []
        self.result: Image.Image | None = None
        self.result_settings: Settings | None = None
        self.weights_in_use: str | None = None
        self._rates: deque[tuple[float, int]] = deque(maxlen=20)
        self._final_size: tuple[int, int] | None = None
        self._compare: HistoryEntry | None = None
        self._export_thread: threading.Thread | None = None

        self._build_ui()
        self._build_actions()
        self._connect()
        geometry, state = self.store.geometry()
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1360, 860)
        if state is not None:
            self.restoreState(state)
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(400)
        self._save_timer.timeout.connect(self._persist)
        if load_defaults:
            self._load_initial_inputs(content, list(styles))
        self._update_state()

    # -- construction ----------------------------------------------------------------

    def _build_ui(self) -> None:
        # Inputs (left)
        self.content_zone = ImageDropZone("Drop a photo here\nor click to open one (Ctrl+O)")
        self.content_zone.setToolTip("The content image: the picture to repaint")
        self.styles_box = QVBoxLayout()
        self.styles_box.setSpacing(2)
        self.style_zone = ImageDropZone("Drop style images here\nor click to add one (Ctrl+Shift+O)", thumb=90)
        self.style_zone.setToolTip("Style images: paintings or textures whose look the picture takes on")
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addWidget(QLabel("<b>Content</b>"))
        left_layout.addWidget(self.content_zone)
        left_layout.addWidget(QLabel("<b>Styles</b>"))
        left_layout.addLayout(self.styles_box)
        left_layout.addWidget(self.style_zone)
        left_layout.addStretch(1)
        left_scroll = QScrollArea()
        left_scroll.setWidgetResizable(True)
        left_scroll.setWidget(left)
        left_scroll.setMinimumWidth(230)

        # Picture (middle)
        self.view = ImageView()
        self.view.setAcceptDrops(False)
        self.banner = MessageBanner()
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setFormat("Ready")
        self.progress.setValue(0)
        self.rate_label = QLabel("")
        self.eta_label = QLabel("")
        self.grad_label = QLabel("")
        self.grad_label.setToolTip(
            "Norm of the loss gradient with respect to the image: how hard the optimisation is still pushing"
        )
        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Start stylising (Ctrl+Enter)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop and keep the picture so far (Esc)")
        run_row = QHBoxLayout()
        run_row.addWidget(self.start_button)
        run_row.addWidget(self.stop_button)
        run_row.addWidget(self.progress, 1)
        for label in (self.rate_label, self.eta_label, self.grad_label):
            label.setMinimumWidth(70)
            run_row.addWidget(label)
        middle = QWidget()
        middle_layout = QVBoxLayout(middle)
        middle_layout.setContentsMargins(0, 0, 0, 0)
        middle_layout.addWidget(self.banner)
        middle_layout.addWidget(self.view, 1)
        middle_layout.addLayout(run_row)

        # Settings (right)
        self.controls = ControlsPanel(self.store.load_settings(), show_all_layers=self.store.show_all_layers())
        weights_file = self.store.weights_file()
        if weights_file is not None:
            current = self.controls.settings().weights
            self.controls.set_weights_file(weights_file)
            self.controls.set_weights(current)
        right_scroll = QScrollArea()
        right_scroll.setWidgetResizable(True)
        right_scroll.setWidget(self.controls)
        right_scroll.setMinimumWidth(330)

        splitter = QSplitter()
        splitter.addWidget(left_scroll)
        splitter.addWidget(middle)
        splitter.addWidget(right_scroll)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([250, 760, 350])
        self.setCentralWidget(splitter)

        self.loss_plot = LossPlot()
        loss_dock = QDockWidget("Loss", self)
        loss_dock.setObjectName("lossDock")
        loss_dock.setWidget(self.loss_plot)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, loss_dock)
        self.history = HistoryStrip()
        history_dock = QDockWidget("History", self)
        history_dock.setObjectName("historyDock")
        history_dock.setWidget(self.history)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, history_dock)
        self.splitDockWidget(history_dock, loss_dock, Qt.Orientation.Horizontal)
        self.loss_dock, self.history_dock = loss_dock, history_dock

        self.weights_label = QLabel()
        self.device_label = QLabel()
        self.zoom_label = QLabel()
        self.zoom_label.setToolTip("Preview zoom: wheel to zoom, Ctrl+0 to fit, Ctrl+1 for 100 %")
        self.view.zoomChanged.connect(lambda zoom: self.zoom_label.setText(f"{zoom * 100:.0f} %"))
        self.statusBar().addPermanentWidget(self.zoom_label)
        self.statusBar().addPermanentWidget(self.device_label)
        self.statusBar().addPermanentWidget(self.weights_label)
        self.setAcceptDrops(True)

    def _action(self, text: str, shortcut: QKeySequence | str | list | None, slot, tip: str = "") -> QAction:
        action = QAction(text, self)
        if isinstance(shortcut, list):
            action.setShortcuts(shortcut)
        elif shortcut is not None:
            action.setShortcut(shortcut)
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        keys = QKeySequence
        self.open_action = self._action("Open content image…", keys.StandardKey.Open, self.open_content)
        self.add_style_action = self._action("Add style image…", "Ctrl+Shift+O", self.add_style_dialog)
        self.paste_action = self._action("Paste as content", keys.StandardKey.Paste, self.paste_content)
        self.paste_style_action = self._action("Paste as style", "Ctrl+Shift+V", self.paste_style)
        self.export_action = self._action(
            "Export…",
            keys.StandardKey.Save,
            self.export_dialog,
            "Save the full-resolution result with its settings embedded",
        )
        self.save_preset_action = self._action("Save preset…", None, self.save_preset_dialog)
        self.load_preset_action = self._action("Load preset…", None, self.load_preset_dialog)
        self.quit_action = self._action("Quit", keys.StandardKey.Quit, self.close)
        self.start_action = self._action("Start", ["Ctrl+Return", "Ctrl+Enter"], self.start, "Start stylising")
        self.stop_action = self._action("Stop", "Esc", self.stop, "Stop and keep the picture so far")
        self.fit_action = self._action("Fit to window", "Ctrl+0", self.view.fit)
        self.actual_action = self._action("Actual size (100%)", "Ctrl+1", self.view.actual_size)
        self.zoom_in_action = self._action("Zoom in", keys.StandardKey.ZoomIn, lambda: self.view.zoom_by(1.25))
        self.zoom_out_action = self._action("Zoom out", keys.StandardKey.ZoomOut, lambda: self.view.zoom_by(0.8))
        self.split_action = self._action(
            "Before / after", "B", self.toggle_split, "Compare with the content image: drag the line to move it"
        )
        self.split_action.setCheckable(True)
        self.reset_action = self._action("Reset settings", None, self.reset_settings)

        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        for a in (
            self.open_action,
            self.add_style_action,
            self.paste_action,
            self.paste_style_action,
            None,
            self.export_action,
            None,
            self.load_preset_action,
            self.save_preset_action,
            None,
            self.quit_action,
        ):
            file_menu.addSeparator() if a is None else file_menu.addAction(a)
        run_menu = menu.addMenu("&Run")
        run_menu.addAction(self.start_action)
        run_menu.addAction(self.stop_action)
        view_menu = menu.addMenu("&View")
        for a in (self.fit_action, self.actual_action, self.zoom_in_action, self.zoom_out_action, self.split_action):
            view_menu.addAction(a)
        view_menu.addSeparator()
        view_menu.addAction(self.loss_dock.toggleViewAction())
        view_menu.addAction(self.history_dock.toggleViewAction())
        settings_menu = menu.addMenu("&Settings")
        settings_menu.addAction(self.reset_action)
        help_menu = menu.addMenu("&Help")
        help_menu.addAction(self._action("About Style Studio", None, self.about))

        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setIconSize(QSize(18, 18))
        for a in (
            self.open_action,
            self.add_style_action,
            None,
            self.start_action,
            self.stop_action,
            None,
            self.export_action,
            None,
            self.fit_action,
            self.actual_action,
            self.split_action,
        ):
            toolbar.addSeparator() if a is None else toolbar.addAction(a)

    def _connect(self) -> None:
        self.content_zone.imagesDropped.connect(lambda items: self.use_as_content(items[0]))
        self.content_zone.refused.connect(self.show_error)
        self.content_zone.clicked.connect(self.open_content)
        self.style_zone.imagesDropped.connect(lambda items: [self.use_as_style(i) for i in items])
        self.style_zone.refused.connect(self.show_error)
        self.style_zone.clicked.connect(self.add_style_dialog)
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.controls.changed.connect(self._settings_changed)
        self.controls.liveChanged.connect(self._live_changed)
        self.controls.chooseWeightsFile.connect(self.choose_weights_file)
        self.controls.reset_button.clicked.connect(self.reset_settings)
        self.controls.save_preset_button.clicked.connect(self.save_preset_dialog)
        self.controls.load_preset_button.clicked.connect(self.load_preset_dialog)
        self.controls.more_layers.toggled.connect(
            lambda: self.store.save_show_all_layers(self.controls.more_layers.isExpanded())
        )
        self.controller.progressed.connect(self._on_progress)
        self.controller.preview.connect(self._on_preview)
        self.controller.finished.connect(self._on_finished)
        self.controller.busy_changed.connect(lambda _: self._update_state())
        self.history.entrySelected.connect(self.view_entry)
        self.history.compareRequested.connect(self.compare_entry)
        self.history.restoreRequested.connect(
            lambda e: self.apply_settings(e.settings, "Settings restored from the history")
        )
        self.history.exportRequested.connect(lambda e: self.export_dialog(entry=e))
        self.exportFinished.connect(self._export_done)

    # -- inputs ----------------------------------------------------------------------

    def _load_initial_inputs(self, content: Path | None, styles: list[Path]) -> None:
        """Files given on the command line, else the last session's, else the bundled samples."""
        given = content is not None or bool(styles)
        content = content or self.store.content_path() or sample(*DEFAULT_CONTENT)
        styles = styles or self.store.style_paths() or [sample(*DEFAULT_STYLE)]
        for path, add in [(content, self.set_content)] + [(p, self.add_style) for p in styles]:
            try:
                add(InputImage.from_file(path))
            except ImageLoadError as exc:
                if given:
                    self.show_error(str(exc))
                log.warning("could not open %s: %s", path, exc)
        if self.content is None:
            self.set_content(InputImage.from_file(sample(*DEFAULT_CONTENT)))
        if not self.style_rows:
            self.add_style(InputImage.from_file(sample(*DEFAULT_STYLE)))

    def _fits(self, item: InputImage, role: str) -> bool:
        """Refuse, with a message, an image too thin to stylise at the current settings."""
        settings = self.controls.settings()
        layers = list(settings.content_layers) + list(settings.active_style_layers)
        longest = settings.size if role == "content" else max(1, round(settings.size * settings.style_scale))
        try:
            if layers:
                check_image_fits(item.image, longest, layers, f"the {role} image")
        except StyleStudioError as exc:
            self.show_error(f"{item.name}: {exc}")
            return False
        return True

    def use_as_content(self, item: InputImage) -> None:
        """The user gave a content image (drop, paste, Open): check it, then use it."""
        if self._fits(item, "content"):
            self.set_content(item)

    def use_as_style(self, item: InputImage) -> None:
        if self._fits(item, "style"):
            self.add_style(item)

    def set_content(self, item: InputImage) -> None:
        self.content = item
        self.content_zone.show_image(item)
        self.view.set_before(pil_to_qimage(item.image))
        if self.result is None:
            self.view.set_image(pil_to_qimage(item.image))
        self._inputs_changed()

    def add_style(self, item: InputImage) -> None:
        row = StyleRow(item)
        row.blendChanged.connect(self._live_changed)
        row.removeRequested.connect(self.remove_style)
        self.styles_box.addWidget(row)
        self.style_rows.append(row)
        self._inputs_changed()

    def remove_style(self, row: StyleRow) -> None:
        self.style_rows.remove(row)
        self.styles_box.removeWidget(row)
        row.deleteLater()
        self._inputs_changed()

    def _inputs_changed(self) -> None:
        self._update_state()
        self._save_timer.start()

    def _open_dir(self) -> str:
        if self.content is not None and self.content.path is not None:
            return str(self.content.path.parent)
        return str(Path.home())

    def open_content(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open content image", self._open_dir(), IMAGE_FILTER)
        if path:
            self._load_file(path, self.use_as_content)

    def add_style_dialog(self) -> None:
        start = str(resources_dir() / "samples" / "style")
        paths, _ = QFileDialog.getOpenFileNames(self, "Add style images", start, IMAGE_FILTER)
        for path in paths:
            self._load_file(path, self.use_as_style)

    def _load_file(self, path: str | Path, use) -> bool:
        try:
            use(InputImage.from_file(path))
            return True
        except ImageLoadError as exc:
            self.show_error(str(exc))
            return False

    def _paste(self, what: str) -> list[InputImage]:
        """Images on the clipboard (image data, or copied files), named "pasted image"."""
        try:
            return images_from_mime(QGuiApplication.clipboard().mimeData(), "pasted image", "the clipboard")
        except ImageLoadError as exc:
            self.show_error(f"Nothing to paste as {what}: {exc}")
            return []

    def paste_content(self) -> None:
        items = self._paste("content")
        if items:
            self.use_as_content(items[0])

    def paste_style(self) -> None:
        for item in self._paste("a style"):
            self.use_as_style(item)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if can_accept(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        """A drop on the picture: an exported image restores its settings; another image becomes the content."""
        mime = event.mimeData()
        for url in mime.urls() if mime.hasUrls() else []:
            if url.isLocalFile() and self._restore_from_file(Path(url.toLocalFile())):
                event.acceptProposedAction()
                return
        try:
            items = images_from_mime(mime)
        except ImageLoadError as exc:
            self.show_error(str(exc))
            return
        event.acceptProposedAction()
        self.use_as_content(items[0])

    def _restore_from_file(self, path: Path) -> bool:
        try:
            text = read_metadata(path)
        except ImageLoadError:
            return False
        if text is None:
            return False
        self._apply_document(text, path.name, f"Settings restored from {path.name}")
        return True

    def _apply_document(self, text: str | bytes, source: str, message: str) -> bool:
        """Apply a settings document (preset or embedded metadata), or say what is wrong with it."""
        try:
            settings = settings_mod.loads(text, source=source)
        except SettingsError as exc:
            self.show_error(str(exc))
            return False
        self.apply_settings(settings, message)
        return True

    # -- settings ----------------------------------------------------------------------

    def current_settings(self) -> Settings:
        blend = tuple(row.blend_weight() for row in self.style_rows)
        if blend and len(set(blend)) == 1 and blend[0] > 0:
            blend = ()  # equal weights: no explicit blend
        return dataclasses.replace(self.controls.settings(), style_blend=blend)

    def apply_settings(self, settings: Settings, message: str = "") -> None:
        """Show ``settings`` in the controls (validated first: nothing half-applied)."""
        try:
            settings.validate()
        except SettingsError as exc:
            self.show_error(str(exc))
            return
        self.controls.set_settings(settings)
        if settings.style_blend and len(settings.style_blend) == len(self.style_rows):
            total = max(settings.style_blend)
            for row, weight in zip(self.style_rows, settings.style_blend, strict=True):
                row.blend.setValue(round(weight / total * 100))
        if message:
            self.show_info(message)

    def _settings_changed(self) -> None:
        self._update_weights_label()
        self._save_timer.start()

    def _live_changed(self) -> None:
        if self.controller.running:
            try:
                self.controller.update_settings(self.current_settings().validate())
            except StyleStudioError as exc:
                self.show_error(str(exc))
        self._save_timer.start()

    def reset_settings(self) -> None:
        """Defaults for everything that shapes the picture; the weights choice stays."""
        weights = self.controls.settings().weights
        self.controls.set_settings(dataclasses.replace(settings_mod.DEFAULTS, weights=weights))
        for row in self.style_rows:
            row.blend.setValue(100)
        self.show_info("Settings reset to their defaults")

    def save_preset_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save preset", self._open_dir(), PRESET_FILTER)
        if path:
            self.save_preset(Path(path) if Path(path).suffix else Path(path).with_suffix(".json"))

    def save_preset(self, path: Path) -> bool:
        text = settings_mod.dumps(self.current_settings(), app_version=__version__)
        tmp = path.with_name(f".{path.name}.part")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            self.show_error(f"{path}: could not save the preset ({exc.strerror or exc})")
            return False
        self.show_info(f"Preset saved to {path.name}")
        return True

    def load_preset_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load preset", self._open_dir(), PRESET_FILTER)
        if path:
            self.load_preset(Path(path))

    def load_preset(self, path: Path) -> bool:
        try:
            text = path.read_bytes()
        except OSError as exc:
            self.show_error(f"{path}: could not read the preset ({exc.strerror or exc})")
            return False
        return self._apply_document(text, path.name, f"Preset {path.name} loaded")

    def choose_weights_file(self) -> None:
        start = str(self.store.weights_file().parent) if self.store.weights_file() else str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "VGG19 weights file", start, WEIGHTS_FILTER)
        if path:
            self.use_weights_file(Path(path))

    def use_weights_file(self, path: Path) -> None:
        self.controls.set_weights_file(path)
        self.store.save_weights_file(path)
        self._update_weights_label()

    # -- running -------------------------------------------------------------------------

    def start(self) -> None:
        if self.controller.running and not self.controller.stopping:
            return
        if self.content is None or not self.style_rows:
            self.show_error("Add a content image and at least one style image first.")
            return
        try:
            settings = self.current_settings().validate()
        except SettingsError as exc:
            self.show_error(str(exc))
            return
        settings = self._ensure_weights(settings)
        if settings is None:
            return
        self.banner.hide()
        job = RenderJob(
            self.content.image,
            tuple(r.item.image for r in self.style_rows),
            settings,
            self.content.name,
            tuple(r.item.name for r in self.style_rows),
        )
        self._final_size = fit_size(*self.content.image.size, settings.size)
        self._rates.clear()
        self.loss_plot.clear()
        self.progress.setRange(0, 0)
        self.progress.setFormat("Loading the network…")
        self.weights_in_use = describe_weights(settings.weights)
        self._update_weights_label()
        self.controller.start(job)
        self._update_state()

    def _ensure_weights(self, settings: Settings) -> Settings | None:
        """Make sure the chosen weights exist; offer the ways to get them when they do not."""
        from ..core.weights import IMAGENET, UNTRAINED, is_imagenet_cached

        if settings.weights == UNTRAINED:
            return settings
        if settings.weights != IMAGENET:
            if Path(settings.weights).is_file():
                return settings
            self.show_error(
                f"The weights file {settings.weights} is missing. Choose another file, the ImageNet "
                "weights, or untrained features under Computation → Weights."
            )
            return None
        if is_imagenet_cached():
            return settings
        dialog = WeightsDialog(self, start_dir=str(Path.home()))
        if not dialog.exec() or dialog.choice is None:
            return None
        if dialog.choice not in (IMAGENET, UNTRAINED):
            self.use_weights_file(Path(dialog.choice))
        else:
            self.controls.set_weights(dialog.choice)
        return dataclasses.replace(settings, weights=dialog.choice)

    def stop(self) -> None:
        if self.controller.running:
            self.controller.stop()
            self.progress.setFormat("Stopping…")
            self._update_state()

    def _on_progress(self, record) -> None:
        now = time.perf_counter()
        self._rates.append((now, record.step))
        rate = 0.0
        if len(self._rates) > 1:
            (t0, s0), (t1, s1) = self._rates[0], self._rates[-1]
            rate = (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0
        if self.progress.maximum() != record.steps:
            self.progress.setRange(0, record.steps)
        self.progress.setValue(record.step)
        self.progress.setFormat(
            f"Scale {record.scale}/{record.scales} · iteration {record.iteration}/"
            f"{record.iterations} · {record.width}×{record.height}"
        )
        self.rate_label.setText(f"{rate:.1f} it/s" if rate else "")
        self.eta_label.setText(f"ETA {_duration(record.eta)}" if record.eta is not None and not record.done else "")
        self.grad_label.setText(f"∇ {record.grad_norm:.3g}")
        if record.weights != self.weights_in_use:
            self.weights_in_use = record.weights
            self._update_weights_label()
        self.device_label.setText(record.compute)
        values = {"total": record.total_loss, "content": record.content_loss, "tv": record.tv_loss}
        values.update(record.style_losses)
        if not record.done:
            self.loss_plot.add(record.step, values)
        if record.event:
            self.show_info(record.event)

    def _on_preview(self, image: QImage) -> None:
        if self._compare is None:
            self.view.set_image(image, self._final_size)

    def _on_finished(self, outcome: RunOutcome) -> None:
        self.weights_in_use = outcome.weights_label or self.weights_in_use
        if outcome.result is not None:
            self.result = outcome.result
            self.result_settings = outcome.settings
            self._compare = None
            self.view.set_image(pil_to_qimage(outcome.result))
            self.view.set_before(pil_to_qimage(self.content.image) if self.content else None)
            self.history.add(
                HistoryEntry(
                    outcome.result, outcome.settings, outcome.weights_label or "", outcome.stop_reason or "failed"
                )
            )
        if outcome.error:
            self.show_error(outcome.error)
            self.progress.setFormat("Stopped with an error")
        elif outcome.stop_reason == "cancelled":
            self.progress.setFormat("Stopped — the picture so far is kept")
        else:
            elapsed = outcome.last.elapsed if outcome.last is not None else 0.0
            self.progress.setFormat(f"Done in {_duration(elapsed)}")
        if self.progress.maximum() == 0:
            self.progress.setRange(0, 1)
        self.eta_label.setText("")
        self._update_state()

    # -- history and view ------------------------------------------------------------------

    def view_entry(self, entry: HistoryEntry) -> None:
        self._compare = None
        self.result = entry.result
        self.result_settings = entry.settings
        self.view.set_image(pil_to_qimage(entry.result))
        self.view.set_before(pil_to_qimage(self.content.image) if self.content else None)

    def compare_entry(self, entry: HistoryEntry) -> None:
        """Split view: this history entry on the left, the current result on the right."""
        self._compare = entry
        self.view.set_before(pil_to_qimage(entry.result))
        self.split_action.setChecked(True)
        self.view.set_split(True)
        self.show_info("Comparing: the history entry is on the left, the current result on the right")

    def toggle_split(self) -> None:
        self.view.set_split(self.split_action.isChecked())

    # -- export --------------------------------------------------------------------------------

    def export_dialog(self, *_: object, entry: HistoryEntry | None = None) -> None:
        image = entry.result if entry else self.result
        if image is None:
            self.show_error("Nothing to export yet: press Start to make a picture first.")
            return
        stem = self.content.path.stem if self.content and self.content.path else "stylised"
        suggestion = str(Path(self._open_dir()) / f"{stem}-styled.png")
        path, chosen = QFileDialog.getSaveFileName(self, "Export picture", suggestion, ";;".join(EXPORT_FILTERS))
        if not path:
            return
        target = Path(path)
        if target.suffix.lower() not in FORMATS:
            target = target.with_suffix(EXPORT_FILTERS.get(chosen, ".png"))
            if (
                target.exists()
                and QMessageBox.question(self, "Replace file?", f"{target.name} already exists. Replace it?")
                != QMessageBox.StandardButton.Yes
            ):
                return
        self.export_to(target, entry=entry)

    def export_to(self, path: Path, *, entry: HistoryEntry | None = None) -> bool:
        """Start writing the result (or a history entry) with its settings embedded.

        The file is written in a background thread (a large TIFF takes
        seconds) and atomically; ``exportFinished`` reports the outcome.
        Returns False when nothing could be started.
        """
        image = entry.result if entry else self.result
        settings = entry.settings if entry else self.result_settings
        if image is None or settings is None:
            self.show_error("Nothing to export yet: press Start to make a picture first.")
            return False
        if self.exporting():
            self.show_error("An export is still being written; try again in a moment.")
            return False
        weights = entry.weights_label if entry else (self.weights_in_use or "")
        metadata = settings_mod.dumps(
            settings,
            app_version=__version__,
            weights_label=weights,
            content=self.content.name if self.content else None,
            styles=[r.item.name for r in self.style_rows],
        )

        def write() -> None:
            try:
                save_image(image, path, metadata, software=f"{APP_NAME} {__version__}")
                error = ""
            except StyleStudioError as exc:
                error = str(exc)
            except Exception as exc:  # never lose the window over an export
                log.exception("export failed")
                error = f"{path}: the export failed ({exc})"
            self.exportFinished.emit(str(path), error)  # queued to the GUI thread

        self.show_info(f"Exporting {path.name}…")
        self._export_thread = threading.Thread(target=write, name="style-studio-export")
        self._export_thread.start()
        self._update_state()
        return True

    def exporting(self) -> bool:
        return self._export_thread is not None and self._export_thread.is_alive()

    def _export_done(self, path: str, error: str) -> None:
        if self._export_thread is not None:
            self._export_thread.join()
            self._export_thread = None
        if error:
            self.show_error(error)
        else:
            self.show_info(f"Exported {Path(path).name}")
        self._update_state()

    # -- state and messages --------------------------------------------------------------------

    def show_error(self, text: str) -> None:
        self.banner.show_message(text, "error")
        self.statusBar().showMessage(text.splitlines()[0], 8000)

    def show_info(self, text: str) -> None:
        self.banner.show_message(text, "info")
        self.statusBar().showMessage(text, 6000)

    def _update_weights_label(self) -> None:
        chosen = self.controls.settings().weights
        if self.controller.running and self.weights_in_use:
            text = f"Weights: {self.weights_in_use}"
        else:
            text = f"Weights: {describe_weights(chosen)}"
        self.weights_label.setText(text)
        untrained = "untrained" in text
        self.weights_label.setStyleSheet("color: #9a4c00; font-weight: bold;" if untrained else "")

    def _update_state(self) -> None:
        running = self.controller.running
        stopping = self.controller.stopping
        ready = self.content is not None and bool(self.style_rows)
        self.start_action.setEnabled(ready and (not running or stopping))
        self.start_button.setEnabled(self.start_action.isEnabled())
        self.stop_action.setEnabled(running and not stopping)
        self.stop_button.setEnabled(self.stop_action.isEnabled())
        self.export_action.setEnabled(self.result is not None and not self.exporting())
        self._update_weights_label()

    def _persist(self) -> None:
        self.store.save_settings(self.current_settings())
        self.store.save_inputs(
            self.content.path if self.content else None,
            [r.item.path for r in self.style_rows if r.item.path is not None],
        )

    def about(self) -> None:
        QMessageBox.about(
            self,
            f"About {APP_NAME}",
            f"<b>{APP_NAME} {__version__}</b><br>Neural style transfer on your own computer.<br>"
            "VGG19 by Simonyan &amp; Zisserman; method by Gatys, Ecker &amp; Bethge.",
        )

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        self.controller.shutdown()
        if self._export_thread is not None:
            self._export_thread.join()  # an export in progress is finished, never cut off
        self._persist()
        self.store.save_geometry(self.saveGeometry(), self.saveState())
        self.store.sync()
        super().closeEvent(event)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
