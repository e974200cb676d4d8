"""The main window: inputs on the left, the picture in the middle, settings on the right.

It composes the parts (``actions``, ``inputs_panel``, ``run_bar``,
``documents``, the controls, the picture, the loss plot and the history),
connects them, and owns what ties them together: starting runs, showing
results, persisting state, and closing.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from PIL import Image
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QImage
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from .. import APP_NAME, __version__
from ..core import BUSY as QUEUE_BUSY
from ..core import (
    FINISHED,
    IMAGENET,
    UNTRAINED,
    Checkpoint,
    CheckpointStore,
    ImageLoadError,
    Progress,
    RegionError,
    Regions,
    RenderQueue,
    RunPlan,
    Settings,
    SettingsError,
    StyleStudioError,
    describe,
    fit_size,
    is_imagenet_cached,
    is_queue_run,
    item_for,
    picture_metadata,
    regions_from_picture,
)
from ..core import settings as settings_mod
from .actions import WindowActions
from .controls import ControlsPanel
from .documents import Documents, pictures_folder
from .history import HistoryEntry, HistoryStrip
from .image_view import ImageView
from .inputs_panel import InputsPanel
from .kept_history import KeptHistory
from .loss_plot import LossPlot
from .qt_images import InputImage, can_accept, images_from_mime, pil_to_qimage
from .queue_panel import QueueController, QueuePanel, images_in
from .regions_panel import RegionEditor, RegionsPanel, style_map_image
from .run_bar import RunBar, ago
from .run_plan import RunPlanner
from .runner import RenderJob, RunController, RunOutcome, WeightsCache
from .store import Store
from .weights_dialog import WEIGHTS_FILTER, WeightsDialog
from .widgets import MessageBanner

log = logging.getLogger(__name__)


class MainWindow(QMainWindow):
    """Style Studio's window.

    Args:
        store: where settings and state persist (tests give an isolated one).
        content, styles: files to open instead of the last session's.
        load_defaults: open those, the last session's or the bundled samples.
        weights: where runs get their weights (tests give a tiny encoder).
        checkpoints: where runs save checkpoints, and unfinished runs are found (the user's cache).
        queue_folder: where the render queue is kept (the user's data folder).
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        content: Path | None = None,
        styles: Sequence[Path] = (),
        load_defaults: bool = True,
        weights: WeightsCache | None = None,
        checkpoints: CheckpointStore | None = None,
        queue_folder: Path | None = None,
    ) -> None:
        super().__init__()
        self.store = store or Store()
        self.setWindowTitle(APP_NAME)
        self.checkpoints = checkpoints if checkpoints is not None else CheckpointStore()
        self.controller = RunController(self, weights=weights, checkpoints=self.checkpoints)
        self.planner = RunPlanner(self.store)
        self._running_plan: RunPlan | None = None
        self.documents = Documents(self)
        self.shown: HistoryEntry | None = None  # the result in the picture area, which Export writes
        self._running_weights: tuple[str, str] | None = None  # (choice, label) of the run in progress
        self._final_size: tuple[int, int] | None = None
        self._compare: HistoryEntry | None = None
        self.regions = RegionEditor(self)
        self.queue = QueueController(RenderQueue(queue_folder), self.controller, self)

        self._exporting: HistoryEntry | None = None
        self._build_ui()
        self.kept = KeptHistory(self.history, parent=self)
        self.kept.restore()
        self.commands = WindowActions(self)
        self.commands.install([self.loss_dock, self.history_dock, self.regions_dock, self.queue_dock])
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
            given = content is not None or bool(styles)
            self.inputs.load_initial(
                content or self.store.content_path(), list(styles) or self.store.style_paths(), given=given
            )
        self._update_state()
        self.offer_resume()

    # -- construction ----------------------------------------------------------------

    def _build_ui(self) -> None:
        self.inputs = InputsPanel(self.current_settings)
        self.view = ImageView()
        self.view.setAcceptDrops(False)
        self.banner = MessageBanner()
        self.run_bar = RunBar()
        middle = QWidget()
        middle_layout = QVBoxLayout(middle)
        middle_layout.setContentsMargins(0, 0, 0, 0)
        middle_layout.addWidget(self.banner)
        middle_layout.addWidget(self.view, 1)
        middle_layout.addWidget(self.run_bar)

        self.controls = ControlsPanel(self.store.load_settings(), show_all_layers=self.store.show_all_layers())
        weights_file = self.store.weights_file()
        if weights_file is not None:
            current = self.controls.settings().weights
            self.controls.set_weights_file(weights_file)
            self.controls.set_weights(current)
        right = QScrollArea()
        right.setWidgetResizable(True)
        right.setWidget(self.controls)
        right.setMinimumWidth(330)

        splitter = QSplitter()
        for part in (self.inputs, middle, right):
            splitter.addWidget(part)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([250, 760, 350])
        self.setCentralWidget(splitter)

        self.loss_plot = LossPlot()
        self.loss_dock = self._dock("Loss", "lossDock", self.loss_plot)
        self.history = HistoryStrip()
        self.history_dock = self._dock("History", "historyDock", self.history)
        self.splitDockWidget(self.history_dock, self.loss_dock, Qt.Orientation.Horizontal)
        self.regions_panel = RegionsPanel(self.regions, self._style_names)
        self.regions_dock = self._dock("Regions", "regionsDock", self.regions_panel)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.regions_dock)
        self.queue_panel = QueuePanel(self.queue)
        self.queue_dock = self._dock("Queue", "queueDock", self.queue_panel)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.queue_dock)
        self.tabifyDockWidget(self.regions_dock, self.queue_dock)
        self.regions_dock.raise_()

        self.weights_label = QLabel()
        self.device_label = QLabel()
        self.zoom_label = QLabel()
        self.zoom_label.setToolTip("Preview zoom: wheel to zoom, Ctrl+0 to fit, Ctrl+1 for 100 %")
        for label in (self.zoom_label, self.device_label, self.weights_label):
            self.statusBar().addPermanentWidget(label)
        self.setAcceptDrops(True)

    def _dock(self, title: str, name: str, widget: QWidget) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        return dock

    def _connect(self) -> None:
        a = self.commands
        for action, slot in (
            (a.open, self.inputs.open_content),
            (a.add_style, self.inputs.add_style_dialog),
            (a.paste, self.inputs.paste_content),
            (a.paste_style, self.inputs.paste_style),
            (a.export, self.export_dialog),
            (a.save_preset, self.save_preset_dialog),
            (a.load_preset, self.load_preset_dialog),
            (a.quit, self.close),
            (a.start, self.start),
            (a.stop, self.stop),
            (a.fit, self.view.fit),
            (a.actual_size, self.view.actual_size),
            (a.zoom_in, lambda: self.view.zoom_by(1.25)),
            (a.zoom_out, lambda: self.view.zoom_by(0.8)),
            (a.split, self.toggle_split),
            (a.undo, self.regions.undo_stack.undo),
            (a.redo, self.regions.undo_stack.redo),
            (a.add_region, self.add_region),
            (a.load_mask, self.load_mask_dialog),
            (a.brush_smaller, lambda: self._resize_brush(1 / 1.25)),
            (a.brush_larger, lambda: self._resize_brush(1.25)),
            (a.add_to_queue, lambda: self.add_to_queue()),
            (a.apply_to_folder, self.apply_to_folder_dialog),
            (a.reset, self.reset_settings),
            (a.about, self.about),
        ):
            action.triggered.connect(slot)
        self.view.zoomChanged.connect(lambda zoom: self.zoom_label.setText(f"{zoom * 100:.0f} %"))
        self.inputs.contentChanged.connect(self._content_changed)
        self.inputs.stylesChanged.connect(self._inputs_changed)
        self.inputs.blendChanged.connect(self._live_changed)
        self.inputs.error.connect(self.show_error)
        self.run_bar.startRequested.connect(self.start)
        self.run_bar.stopRequested.connect(self.stop)
        self.controls.changed.connect(self._settings_changed)
        self.controls.liveChanged.connect(self._live_changed)
        self.controls.chooseWeightsFile.connect(self.choose_weights_file)
        self.controls.resetRequested.connect(self.reset_settings)
        self.controls.savePresetRequested.connect(self.save_preset_dialog)
        self.controls.loadPresetRequested.connect(self.load_preset_dialog)
        self.controls.showAllLayersToggled.connect(self.store.save_show_all_layers)
        self.controller.planned.connect(self._on_planned)
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
        self.history.removeRequested.connect(self.kept.remove)
        self.documents.info.connect(self.show_info)
        self.documents.error.connect(self.show_error)
        self.documents.exportFinished.connect(self._exported)
        self._connect_regions()
        self.queue.message.connect(self.show_info)
        self.queue.error.connect(self.show_error)
        self.queue.changed.connect(self._update_state)

    def _connect_regions(self) -> None:
        a, editor, panel = self.commands, self.regions, self.regions_panel
        stack = editor.undo_stack
        a.undo.setEnabled(False)
        a.redo.setEnabled(False)
        stack.canUndoChanged.connect(a.undo.setEnabled)
        stack.canRedoChanged.connect(a.redo.setEnabled)
        stack.undoTextChanged.connect(lambda text: a.undo.setText(f"Undo {text}".strip()))
        stack.redoTextChanged.connect(lambda text: a.redo.setText(f"Redo {text}".strip()))
        a.paint.toggled.connect(panel.paint_button.setChecked)
        panel.paint_button.toggled.connect(a.paint.setChecked)
        a.eraser.toggled.connect(panel.erase_button.setChecked)
        panel.erase_button.toggled.connect(a.eraser.setChecked)
        panel.paintToggled.connect(self._paint_mode)
        panel.loadMaskRequested.connect(self.load_mask_dialog)
        panel.brush_size.valueChanged.connect(lambda _: self._show_brush())
        self.view.strokeStarted.connect(self._stroke_started)
        self.view.strokeMoved.connect(editor.stroke_to)
        self.view.strokeEnded.connect(editor.end_stroke)
        editor.painting.connect(self._show_regions)
        editor.changed.connect(self._regions_changed)
        a.style_map.toggled.connect(lambda _: self._style_map_changed())
        a.show_regions.toggled.connect(lambda _: self._show_regions())
        panel.map_layer.activated.connect(lambda _: self._style_map_changed())
        self.controls.changed.connect(self._show_map_layers)
        self.controls.liveChanged.connect(self._show_map_layers)
        self._show_map_layers()

    # -- inputs ----------------------------------------------------------------------

    def _content_changed(self, item: InputImage) -> None:
        """A new photo: show it; the last result (made from the old one) stays in the history."""
        if self.regions.set_photo(*item.image.size):
            self.show_info(
                "The regions were cleared: they were painted on the previous photo (Ctrl+Z brings nothing back)"
            )
        self._show_brush()
        photo = pil_to_qimage(item.image)
        self.controls.set_photo_size(*item.image.size)
        self.view.set_before(photo)
        self._compare = None
        self.shown = None
        self.view.set_image(photo)
        self._inputs_changed()

    def _inputs_changed(self) -> None:
        self.regions.set_style_count(len(self.inputs.style_rows))
        self.regions_panel.refresh()
        self._update_state()
        self._update_needs()
        self._save_timer.start()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if can_accept(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        """A drop on the picture: an exported image restores its settings; another image becomes the content."""
        mime = event.mimeData()
        for url in mime.urls() if mime.hasUrls() else []:
            if not url.isLocalFile():
                continue
            path = Path(url.toLocalFile())
            embedded, settings = self.documents.settings_in_picture(path)
            if embedded:
                if settings is not None:
                    self.apply_settings(settings, f"Settings restored from {path.name}")
                    self._restore_regions(self.documents.regions_in_picture(path), path.name)
                event.acceptProposedAction()
                return
        try:
            items = images_from_mime(mime)
        except ImageLoadError as exc:
            self.show_error(str(exc))
            return
        event.acceptProposedAction()
        self.inputs.use_as_content(items[0])

    # -- settings ----------------------------------------------------------------------

    def current_settings(self) -> Settings:
        return dataclasses.replace(self.controls.settings(), style_blend=self.inputs.blend())

    def apply_settings(self, settings: Settings, message: str = "") -> None:
        """Show ``settings`` in the controls (validated first: nothing half-applied)."""
        try:
            settings.validate()
        except SettingsError as exc:
            self.show_error(str(exc))
            return
        self.controls.set_settings(settings)
        self.inputs.show_blend(settings.style_blend)
        if message:
            self.show_info(message)

    def _settings_changed(self) -> None:
        self._update_weights_label()
        self._update_needs()
        self._save_timer.start()

    def announced_plan(self, settings: Settings | None = None) -> RunPlan | None:
        """The plan the window announces for a run of ``settings`` (default: the panel's) on the pictures shown."""
        content = self.inputs.content
        if content is None:
            return None
        styles = [r.item.image.size for r in self.inputs.style_rows]
        return self.planner.plan(settings or self.current_settings(), content.image.size, styles)

    def _update_needs(self) -> None:
        """Before Start: the memory the run will need, tiled or not, and how long it will take."""
        label = self.controls.needs
        plan = self.announced_plan()
        label.setText("" if plan is None else self.planner.describe(plan))
        label.setStyleSheet("color: #8a1c12;" if plan is not None and plan.refusal else "")

    def _on_planned(self, plan: RunPlan) -> None:
        """The run that started planned this: later announcements plan for its device and precision."""
        self._running_plan = plan
        settings = self.controller.job_settings()
        if settings is not None:
            self.planner.learn(settings, plan)
            self._update_needs()

    def _live_changed(self) -> None:
        if self.controller.running and self.queue.current is None:  # a queued job keeps its own settings
            try:
                self.controller.update_settings(self.current_settings().validate())
            except SettingsError as exc:
                self.show_error(str(exc))
        self._save_timer.start()

    def reset_settings(self) -> None:
        """Defaults for everything that shapes the picture; the weights choice stays."""
        weights = self.controls.settings().weights
        self.controls.set_settings(dataclasses.replace(settings_mod.DEFAULTS, weights=weights))
        self.inputs.reset_blend()
        self.show_info("Settings reset to their defaults")

    def save_preset_dialog(self) -> None:
        path = self.documents.ask_preset_to_save(self.inputs.open_dir())
        if path is not None:
            self.save_preset(path)

    def save_preset(self, path: Path) -> bool:
        return self.documents.save_preset(path, self.current_settings(), self.regions.current(painted_only=False))

    def load_preset_dialog(self) -> None:
        path = self.documents.ask_preset_to_load(self.inputs.open_dir())
        if path is not None:
            self.load_preset(path)

    def load_preset(self, path: Path) -> bool:
        settings = self.documents.load_preset(path)
        if settings is not None:
            self.apply_settings(settings, f"Preset {path.name} loaded")
            self._restore_regions(self.documents.regions_in_preset(path), path.name)
        return settings is not None

    def choose_weights_file(self) -> None:
        known = self.store.weights_file()
        start = str(known.parent) if known else str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "VGG19 weights file", start, WEIGHTS_FILTER)
        if path:
            self.use_weights_file(Path(path))

    def use_weights_file(self, path: Path) -> None:
        self.controls.set_weights_file(path)
        self.store.save_weights_file(path)
        self._update_weights_label()

    # -- running -------------------------------------------------------------------------

    def start(self, *, resume: Checkpoint | None = None) -> None:
        """Start a run with the current inputs and settings (going on from ``resume``, when given)."""
        if self.queue.busy:
            self.show_error("The queue is rendering: pause it (Queue panel, or Esc) to run here.")
            return
        if self.controller.running and not self.controller.stopping:
            return
        content = self.inputs.content
        if content is None or not self.inputs.style_rows:
            self.show_error("Add a content image and at least one style image first.")
            return
        try:
            # A resume runs with the checkpoint's own settings: the controls may round
            # or clamp them (a blend shown relative to its largest weight, a command
            # line's weight past a slider's end), and the run would then be refused.
            settings = (resume.settings if resume is not None else self.current_settings()).validate()
        except SettingsError as exc:
            self.show_error(str(exc))
            return
        ready = self._ensure_weights(settings)
        if ready is None:
            return
        settings = ready
        regions = self.regions.current()
        if regions is not None and resume is None:
            try:
                regions.check(len(self.inputs.style_rows))
            except RegionError as exc:
                self.show_error(f"The regions cannot be used: {exc}.")
                return
        self.banner.hide()
        rows = self.inputs.style_rows
        job = RenderJob(
            content.image,
            tuple(r.item.image for r in rows),
            settings,
            content.name,
            tuple(r.item.name for r in rows),
            resume,
            regions,
        )
        self._final_size = fit_size(*content.image.size, settings.size)
        self.loss_plot.clear()
        self.run_bar.begin()
        self._running_weights = (settings.weights, describe(settings.weights))
        self.controller.start(job)
        self._update_state()

    # -- unfinished runs ------------------------------------------------------------

    def offer_resume(self) -> None:
        """Offer to go on with the newest unfinished run (after a crash, a kill or closing during a run)."""
        try:
            # The queue's own runs are the queue's to resume.
            unfinished = [c for c in self.checkpoints.unfinished() if not is_queue_run(c.run_id)]
        except OSError as exc:
            log.warning("cannot list unfinished runs: %s", exc)
            unfinished = []
        # Files this version could not read were set aside or left alone: say where they are.
        kept = "".join(f" {n[0].upper()}{n[1:]}." for n in [*self.queue.queue.notices, *self.checkpoints.notices])
        if not unfinished:
            if kept:
                self.banner.show_message(kept.strip(), "info")
            return
        checkpoint = unfinished[0]
        more = f" ({len(unfinished) - 1} older ones too)" if len(unfinished) > 1 else ""
        self.banner.show_message(
            f"An unfinished run can be resumed: {checkpoint.describe()}, {ago(checkpoint.saved_at)}{more}.{kept}",
            "info",
            [("Resume", lambda: self.resume(checkpoint)), ("Discard", lambda: self.discard_unfinished(unfinished))],
        )

    def resume(self, checkpoint: Checkpoint) -> None:
        """Load an unfinished run's pictures and settings and go on with it where it stood."""
        if self.controller.running:
            self.show_error("Stop the current run before resuming another.")
            return
        try:
            content, styles = checkpoint.inputs()
        except StyleStudioError as exc:
            self.show_error(str(exc))
            return
        names = checkpoint.names
        self.inputs.set_content(InputImage(content, names[0]))
        for row in list(self.inputs.style_rows):
            self.inputs.remove_style(row)
        for number, style in enumerate(styles, start=1):
            name = names[number] if number < len(names) else f"style {number}"
            self.inputs.add_style(InputImage(style, name))
        self.controls.set_settings(checkpoint.settings)
        self.inputs.show_blend(checkpoint.settings.style_blend)
        try:
            painted = checkpoint.painted()
        except RegionError as exc:
            self.show_error(f"The unfinished run's regions cannot be read: {exc}")
            return
        self.regions.replace(painted, "Regions of the unfinished run")
        self.start(resume=checkpoint)

    def discard_unfinished(self, checkpoints: Sequence[Checkpoint]) -> None:
        for checkpoint in checkpoints:
            self.checkpoints.discard(checkpoint.run_id)
        self.statusBar().showMessage("Unfinished runs discarded", 4000)

    def _ensure_weights(self, settings: Settings) -> Settings | None:
        """Make sure the chosen weights exist; offer the ways to get them when they do not."""
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
        if self.queue.current is not None:
            self.queue.set_paused(True)  # Stop (Esc) during a queued job pauses the queue
            self.show_info("The queue is paused; the job under way will go again when it goes on")
            return
        if self.controller.running:
            self.controller.stop()
            self.run_bar.show_stopping()
            self._update_state()

    def _on_progress(self, record: Progress) -> None:
        if self.queue.current is not None:
            self.queue.on_progress(record)
            return
        self.run_bar.show_progress(record)
        if self._running_weights is not None and record.weights != self._running_weights[1]:
            self._running_weights = (self._running_weights[0], record.weights)
            self._update_weights_label()
        self.device_label.setText(record.compute)
        if not record.done and not record.within_iteration:
            self.loss_plot.add(record.step, record.loss_curves())
        if record.style_map is not None and self.commands.style_map.isChecked():
            self.view.set_overlay("style map", style_map_image(record.style_map))
        if record.event:
            self.show_info(record.event)

    def _on_preview(self, image: QImage) -> None:
        if self._compare is None and self.queue.current is None:
            self.view.set_image(image, self._final_size)

    def _on_finished(self, outcome: RunOutcome) -> None:
        if self.queue.current is not None:
            self.queue.on_finished(outcome)
            self._update_state()
            return
        self._finished_here(outcome)
        self.queue.start_next()

    def _finished_here(self, outcome: RunOutcome) -> None:
        self._measure_speed(outcome)
        if outcome.result is not None:
            label = outcome.weights_label or (self._running_weights[1] if self._running_weights else "")
            entry = HistoryEntry(
                outcome.result,
                outcome.settings,
                label,
                outcome.stop_reason or "failed",
                deep=outcome.deep,
                regions=outcome.regions,
                key=outcome.key if outcome.stop_reason == FINISHED else None,
            )
            if self.queue.closing:
                self.history.add(entry)  # cut off by closing: its checkpoint keeps it, to be resumed
            else:
                entry = self.kept.add(entry)
            self._show(entry)
        if outcome.error:
            self.show_error(outcome.error)
        self.run_bar.show_outcome(outcome)
        self._running_weights = None
        self._update_state()

    def _measure_speed(self, outcome: RunOutcome) -> None:
        """Keep a finished run's speed per pixel, for the next runs' expected time."""
        last, plan = outcome.last, self._running_plan
        self._running_plan = None
        if outcome.stop_reason != FINISHED or last is None or last.elapsed < 1.0 or plan is None or plan.work <= 0:
            return
        self.store.save_speed(last.elapsed / plan.work, last.compute)
        self._update_needs()

    @property
    def result(self) -> Image.Image | None:
        """The picture shown (and exported), if it is a result."""
        return self.shown.result if self.shown is not None else None

    def _show(self, entry: HistoryEntry) -> None:
        self.shown = entry
        self._compare = None
        self.view.set_image(pil_to_qimage(entry.result))
        content = self.inputs.content
        self.view.set_before(pil_to_qimage(content.image) if content else None)

    # -- history and view ------------------------------------------------------------------

    def view_entry(self, entry: HistoryEntry) -> None:
        self._show(entry)
        self._update_state()

    def compare_entry(self, entry: HistoryEntry) -> None:
        """Split view: this history entry on the left, the current result on the right."""
        self._compare = entry
        self.view.set_before(pil_to_qimage(entry.result))
        self.commands.split.setChecked(True)
        self.view.set_split(True)
        self.show_info("Comparing: the history entry is on the left, the current result on the right")

    def toggle_split(self) -> None:
        self.view.set_split(self.commands.split.isChecked())

    # -- export --------------------------------------------------------------------------------

    def export_dialog(self, *_: object, entry: HistoryEntry | None = None) -> None:
        if (entry or self.shown) is None:
            self.show_error("Nothing to export yet: press Start to make a picture first.")
            return
        content = self.inputs.content
        chosen = self.documents.ask_export_path(content.path if content else None)
        if chosen is not None:
            path, bit_depth = chosen
            self.export_to(path, entry=entry, bit_depth=bit_depth)

    def export_to(self, path: Path, *, entry: HistoryEntry | None = None, bit_depth: int = 8) -> bool:
        """Start writing the result (or a history entry) with its settings embedded.

        16 bits per channel write the run's own values (PNG and TIFF); the
        photo's print resolution (DPI) is kept. ``documents.exportFinished``
        reports the outcome. Returns False when nothing could be started.
        """
        entry = entry or self.shown
        if entry is None:
            self.show_error("Nothing to export yet: press Start to make a picture first.")
            return False
        content = self.inputs.content
        metadata = picture_metadata(
            entry.settings,
            weights_label=entry.weights_label,
            app_version=__version__,
            content=content.name if content else None,
            styles=[r.item.name for r in self.inputs.style_rows],
            regions=entry.regions,
            key=entry.key,
        )
        picture = entry.deep if bit_depth == 16 and entry.deep is not None else entry.result
        chosen_dpi = self.controls.print_dpi.value()
        dpi = (chosen_dpi, chosen_dpi) if chosen_dpi else (content.image.info.get("dpi") if content else None)
        started = self.documents.export(picture, path, metadata, bit_depth=bit_depth, dpi=dpi)
        if started:
            self._exporting = entry
        self._update_state()
        return started

    def _exported(self, _path: str, error: str) -> None:
        entry, self._exporting = self._exporting, None
        if entry is not None and not error:
            self.kept.let_go(entry)  # exported: the kept copy is no longer needed
        self._update_state()

    # -- the render queue ------------------------------------------------------------------------

    def queue_output_folder(self) -> Path:
        return self.store.queue_folder() or (pictures_folder() / "Style Studio")

    def _queued_inputs(self) -> tuple[Path, list[Path]] | None:
        """The current photo and styles as files (a pasted one is saved into the queue's folder first)."""
        if not self.queue.queue.owned:
            self.show_error(f"{QUEUE_BUSY[0].upper()}{QUEUE_BUSY[1:]}.")
            return None
        content = self.inputs.content
        if content is None or not self.inputs.style_rows:
            self.show_error("Add a content image and at least one style image first.")
            return None
        try:
            photo = self._as_file(content)
            styles = [self._as_file(row.item) for row in self.inputs.style_rows]
        except OSError as exc:
            self.show_error(f"The pasted picture could not be kept for the queue ({exc.strerror or exc})")
            return None
        return photo, styles

    def _as_file(self, item: InputImage) -> Path:
        if item.path is not None and item.path.is_file():
            return item.path
        from ..core import image_hash

        folder = self.queue.queue.folder / "inputs"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{image_hash(item.image)[:16]}.png"
        if not path.exists():
            item.image.save(path)
        return path

    def add_to_queue(self, output_folder: Path | None = None) -> bool:
        """Queue the current photo and styles with the current settings and regions."""
        inputs = self._queued_inputs()
        if inputs is None:
            return False
        try:
            settings = self.current_settings().validate()
        except SettingsError as exc:
            self.show_error(str(exc))
            return False
        regions = self.regions.current()
        folder = output_folder or self.queue_output_folder()
        photo, styles = inputs
        item = item_for(
            photo, styles, settings, folder, self.queue.queue, regions=regions.to_json() if regions else None
        )
        self.queue_dock.show()
        self.queue_dock.raise_()
        self.queue.add([item])
        return True

    def apply_to_folder_dialog(self) -> None:
        source = QFileDialog.getExistingDirectory(self, "Pictures to stylise", self.inputs.open_dir())
        if not source:
            return
        target = QFileDialog.getExistingDirectory(
            self, "Where the stylised pictures go", str(self.queue_output_folder())
        )
        if target:
            self.store.save_queue_folder(Path(target))
            self.apply_to_folder(Path(source), Path(target))

    def apply_to_folder(self, folder: Path, output_folder: Path) -> int:
        """Queue every picture in ``folder`` with the current styles and settings; returns how many."""
        inputs = self._queued_inputs()
        if inputs is None:
            return 0
        try:
            settings = self.current_settings().validate()
            photos = images_in(folder)
        except (SettingsError, OSError) as exc:
            self.show_error(str(exc))
            return 0
        if not photos:
            self.show_error(f"{folder} has no pictures to stylise.")
            return 0
        _, styles = inputs
        # The regions were painted on this photo: other photos get the styles everywhere.
        items = [item_for(photo, styles, settings, output_folder, self.queue.queue) for photo in photos]
        self.queue_dock.show()
        self.queue_dock.raise_()
        self.queue.add(items)
        return len(items)

    # -- regions ------------------------------------------------------------------------------

    def _show_map_layers(self) -> None:
        """The style map's layer choice: the style layers in use."""
        box = self.regions_panel.map_layer
        layers = list(self.current_settings().active_style_layers)
        if [box.itemText(i) for i in range(box.count())] == layers:
            return
        current = box.currentText()
        box.clear()
        box.addItems(layers)
        if current in layers:
            box.setCurrentText(current)
        elif layers:
            box.setCurrentIndex(len(layers) // 2)
        self._style_map_changed()

    def _style_map_changed(self) -> None:
        on = self.commands.style_map.isChecked()
        layer = self.regions_panel.map_layer.currentText() or None
        self.controller.set_style_map(layer if on else None)
        if not on:
            self.view.set_overlay("style map", None)
        elif self.controller.running:
            self.show_info(f"The style map of {layer} appears with the next preview")
        else:
            self.show_info(f"The style map of {layer} is drawn over the preview while a run goes on")

    def _style_names(self) -> list[str]:
        return [row.item.name for row in self.inputs.style_rows]

    def add_region(self) -> None:
        if self.inputs.content is None:
            self.show_error("Open a photo first: regions are painted on it.")
            return
        self.regions.add_region()
        self.regions_dock.show()
        self.commands.paint.setChecked(True)

    def _paint_mode(self, on: bool) -> None:
        if on and self.inputs.content is not None:
            # Paint on the photo: a result may be of another size, but regions belong to the photo.
            if not self.regions.regions:
                self.regions.add_region()
            self.regions_dock.show()
        self.view.set_painting(on)
        self._show_brush()
        self._show_regions()

    def _show_brush(self) -> None:
        width = self.regions.size[0]
        self.view.set_brush(self.regions.brush_radius / max(width, 1))

    def _resize_brush(self, factor: float) -> None:
        slider = self.regions_panel.brush_size
        slider.setValue(max(1, round(slider.value() * factor + (1 if factor > 1 else -1) * 0.5)))

    def _stroke_started(self, point: object) -> None:
        if not self.regions.begin_stroke(point):  # type: ignore[arg-type]
            self.show_info("Choose a region to paint in the Regions panel, or add one (Ctrl+Shift+N)")

    def _show_regions(self) -> None:
        # While painting, and on the user's toggle (R): a result or the history is seen clean otherwise.
        shown = self.view.painting() or (self.commands.show_regions.isChecked() and bool(self.regions.regions))
        self.view.set_overlay("regions", self.regions.overlay() if shown else None)

    def _regions_changed(self) -> None:
        self._show_regions()
        if self.controller.running and self.queue.current is None:
            try:
                self.controller.update_regions(self.regions.current())
            except RegionError as exc:
                self.show_error(f"The regions cannot be used: {exc}.")

    def load_mask_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Load region mask",
            self.inputs.open_dir(),
            "Pictures (*.png *.bmp *.tif *.tiff *.webp);;All files (*)",
        )
        if path:
            self.load_mask(Path(path))

    def load_mask(self, path: Path) -> bool:
        """Regions from a mask picture: one per colour (black unpainted), or one from a greyscale picture."""
        content = self.inputs.content
        if content is None:
            self.show_error("Open a photo first: the mask is fitted to it.")
            return False
        try:
            regions, notice = regions_from_picture(path, max(len(self.inputs.style_rows), 1), content.image.size)
        except RegionError as exc:
            self.show_error(str(exc))
            return False
        self.regions.replace(regions, f"Load {path.name}")
        self.regions_dock.show()
        self.show_info(notice or f"{len(regions)} region(s) loaded from {path.name}")
        return True

    def _restore_regions(self, regions: Regions | None, source: str) -> None:
        if regions is None:
            return
        if self.inputs.content is None:
            self.show_error(f"{source} has regions, but there is no photo to put them on.")
            return
        scaled = regions.size != self.regions.size
        self.regions.replace(regions, f"Regions from {source}")
        self.regions_dock.show()
        if scaled:
            width, height = self.regions.size
            self.show_info(f"Regions restored from {source}, scaled to the photo's {width}×{height}")

    # -- state and messages --------------------------------------------------------------------

    def show_error(self, text: str) -> None:
        self.banner.show_message(text, "error")
        self.statusBar().showMessage(text.splitlines()[0], 8000)

    def show_info(self, text: str) -> None:
        self.banner.show_message(text, "info")
        self.statusBar().showMessage(text, 6000)

    def _update_weights_label(self) -> None:
        choice, label = self._running_weights or (self.controls.settings().weights, "")
        self.weights_label.setText(f"Weights: {label or describe(choice)}")
        self.weights_label.setStyleSheet("color: #9a4c00; font-weight: bold;" if choice == UNTRAINED else "")

    def _update_state(self) -> None:
        running, stopping = self.controller.running, self.controller.stopping
        a = self.commands
        a.start.setEnabled(self.inputs.ready and (not running or stopping))
        a.stop.setEnabled(running and not stopping)
        self.run_bar.set_enabled(can_start=a.start.isEnabled(), can_stop=a.stop.isEnabled())
        a.export.setEnabled(self.shown is not None and not self.documents.exporting)
        self._update_weights_label()

    def _persist(self) -> None:
        self.store.save_settings(self.current_settings())
        content = self.inputs.content
        self.store.save_inputs(
            content.path if content else None,
            [r.item.path for r in self.inputs.style_rows if r.item.path is not None],
        )

    def about(self) -> None:
        QMessageBox.about(
            self,
            f"About {APP_NAME}",
            f"<b>{APP_NAME} {__version__}</b><br>Neural style transfer on your own computer.<br>"
            "VGG19 by Simonyan &amp; Zisserman; method by Gatys, Ecker &amp; Bethge.",
        )

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        self.queue.closing = True  # a queued job stopped by closing waits for the next start
        self.controller.shutdown()
        self.queue.wait()
        self.queue.queue.close()
        self.documents.wait()
        self.kept.wait()
        self._persist()
        self.store.save_geometry(self.saveGeometry(), self.saveState())
        self.store.sync()
        super().closeEvent(event)
