"""The main window: inputs on the left, the picture in the middle, settings on the right.

It composes the parts (``actions``, ``inputs_panel``, ``run_bar``,
``documents``, the controls, the picture, the loss plot and the history),
connects them, and owns what ties them together: starting runs, showing
results, persisting state, and closing.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from .. import APP_NAME, __version__
from ..core import (
    IMAGENET,
    UNTRAINED,
    CheckpointStore,
    RenderQueue,
    Settings,
    SettingsError,
    WeightsCache,
    describe,
    missing_weights,
)
from ..core import settings as settings_mod
from .actions import WindowActions
from .controls import ControlsPanel
from .documents import Documents
from .feedback import Feedback
from .file_commands import FileCommands
from .history import HistoryStrip
from .image_view import ImageView
from .inputs_panel import InputsPanel
from .instant_preview import InstantPreview, look_note
from .kept_history import KeptHistory
from .loss_plot import LossPlot
from .pictures import HistoryEntry, InputImage
from .qt_images import can_accept, pil_to_qimage
from .queue_intake import QueueIntake
from .queue_panel import QueueController, QueuePanel
from .regions_panel import RegionEditor, RegionsPanel
from .regions_wiring import RegionsWiring
from .run_bar import RunBar
from .run_plan import RunPlanner
from .runner import USER, RunController
from .state import WindowState
from .store import Store
from .unfinished_runs import UnfinishedRuns
from .user_runs import RunDisplay, UserRuns
from .video_runs import VideoRuns
from .widgets import MessageBanner

log = logging.getLogger(__name__)

#: The window's size on a screen large enough for it; on a smaller one it takes the whole screen.
DEFAULT_SIZE = (1600, 1000)
#: The version of the docks' layout: a saved layout of another is not restored (the picture-first one replaced
#: the one with the history and the loss plot below the picture).
LAYOUT_VERSION = 3
#: The dock areas beside the picture, where the history is a grid rather than a strip.
_SIDE_AREAS = (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea)


class MainWindow(QMainWindow):
    """Style Studio's window.

    Args:
        store: where settings and state persist (tests give an isolated one).
        content, styles: files to open instead of the last session's.
        load_defaults: open those, the last session's or the bundled samples.
        weights: where runs get their weights (tests give a tiny encoder).
        checkpoints: where runs save checkpoints, and unfinished runs are found (the user's cache).
        queue_folder: where the render queue is kept (the user's data folder).
        instant_look: show the instant look once a photo and a style are in (``InstantPreview``).
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
        instant_look: bool = True,
    ) -> None:
        super().__init__()
        self.store = store or Store()
        self.setWindowTitle(APP_NAME)
        self.checkpoints = checkpoints if checkpoints is not None else CheckpointStore()
        self.controller = RunController(self, weights=weights, checkpoints=self.checkpoints)
        self.planner = RunPlanner(self.store)
        self.documents = Documents(self)
        self._compare: HistoryEntry | None = None  # a history entry shown beside the result, in the split view
        self.state = self._stored_state()
        self.regions = RegionEditor(self.state, self)
        self.queue = QueueController(RenderQueue(queue_folder), self.controller, self)

        self._build_ui()
        self.feedback = Feedback(self.show_info, self.show_error, self.statusBar().showMessage)  # "": cleared
        self.kept = KeptHistory(self.history, parent=self)
        self.kept.restore()
        self.commands = WindowActions(self)
        # Named by the runs' own weights: a look tuned by a run is the look before Start.
        self.instant = InstantPreview(self.state, self, weights=self.controller.weights) if instant_look else None
        self._make_parts()
        self.commands.install([self.loss_dock, self.history_dock, self.regions_dock, self.queue_dock])
        for action in self.findChildren(QAction):  # before the commands' own slots: an error they cause stays
            action.triggered.connect(self.banner.clear_error)
        self._connect()
        self._restore_layout()
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(400)
        self._save_timer.timeout.connect(self._persist)
        self.state.video_changed.connect(lambda *_: self._save_timer.start())
        self.state.print_dpi_changed.connect(lambda _: self._save_timer.start())
        if load_defaults:
            given = content is not None or bool(styles)
            self.inputs.load_initial(
                content or self.store.content_path(), list(styles) or self.store.style_paths(), given=given
            )
        self._show_commands()
        self.unfinished.offer(self.kept.notices)

    # -- construction ----------------------------------------------------------------

    def _make_parts(self) -> None:
        """The parts that do the window's work, each handed the objects and callbacks it needs by name."""
        self.painting = RegionsWiring(
            regions=self.regions, panel=self.regions_panel, dock=self.regions_dock, actions=self.commands,
            view=self.view, state=self.state, controller=self.controller,
            feedback=self.feedback, parent=self,
        )  # fmt: skip
        self.intake = QueueIntake(
            state=self.state, queue=self.queue, store=self.store,
            show_queue=self._show_queue, feedback=self.feedback, parent=self,
        )  # fmt: skip
        self.unfinished = UnfinishedRuns(
            checkpoints=self.checkpoints, queue=self.queue.queue, state=self.state,
            regions=self.regions, controller=self.controller,
            start=lambda checkpoint: self.runs.start(resume=checkpoint), banner=self.banner, feedback=self.feedback,
        )  # fmt: skip
        display = RunDisplay(
            self.view, self.run_bar, self.loss_plot, self.controls.needs, self.device_label, self.banner,
            comparing=lambda: self._compare is not None,
            weights_changed=self._update_weights_label,
        )  # fmt: skip
        self.runs = UserRuns(
            state=self.state, controller=self.controller, queue=self.queue,
            planner=self.planner, store=self.store, history=self.history, kept=self.kept, display=display,
            feedback=self.feedback, use_weights_file=lambda path: self.files.use_weights_file(path), parent=self,
            look=self.instant,
        )  # fmt: skip
        self.files = FileCommands(
            state=self.state, controls=self.controls,
            documents=self.documents, kept=self.kept, apply_settings=self.apply_settings,
            restore_regions=self.painting.restore, store=self.store, feedback=self.feedback, parent=self,
        )  # fmt: skip
        self.video = VideoRuns(
            state=self.state,
            ensure_weights=self.runs.ensure_weights, controller=self.controller, queue=self.queue, view=self.view,
            loss_plot=self.loss_plot, run_bar=self.run_bar, feedback=self.feedback,
            follow_frame=self.inputs.follow_frame, rest_on_frame=self.inputs.show_frame, keep=self.kept.add,
            parent=self,
        )  # fmt: skip

    def _restore_layout(self) -> None:
        """The window's size and docks as the last session left them, else the default ones."""
        geometry, docks = self.store.geometry()
        if geometry is None or not self.restoreGeometry(geometry):
            self._fit_to_screen()
        if docks is None or not self.restoreState(docks, LAYOUT_VERSION):  # another version's: the default
            self.reset_layout()

    def _stored_state(self) -> WindowState:
        """The window's state as the last session left it: the settings, the video's options, the print dpi."""
        # The blend is the style rows' (equal until they are restored and moved), as the state's first value.
        stored = dataclasses.replace(self.store.load_settings(), style_blend=())
        state = WindowState(stored)
        self._planned = stored.plan_key()  # what of the settings the needs shown were planned for
        state.load_video(self.store.video_options())
        state.set_print_dpi(self.store.print_dpi())
        return state

    def _build_ui(self) -> None:
        self.inputs = InputsPanel(self.state)
        middle, right = self._picture_area(), self._settings_column()

        # The picture first: the centre is the picture and the settings; the photo, the styles, the history and
        # the loss curves share the left column; regions and the queue open beside the settings when used.
        splitter = QSplitter()
        splitter.setChildrenCollapsible(False)
        for part in (middle, right):
            splitter.addWidget(part)
        splitter.setStretchFactor(0, 1)
        splitter.setSizes([1000, right.minimumWidth()])
        self.setCentralWidget(splitter)

        self._build_docks()

        self.weights_label = QLabel()
        self.device_label = QLabel()
        self.zoom_label = QLabel()
        self.zoom_label.setToolTip("Preview zoom: wheel to zoom, Ctrl+0 to fit, Ctrl+1 for 100 %")
        for label in (self.zoom_label, self.device_label, self.weights_label):
            self.statusBar().addPermanentWidget(label)
        self.setAcceptDrops(True)

    def _picture_area(self) -> QWidget:
        """The picture, a banner over its top, and the run bar under it."""
        self.view = ImageView()
        self.view.setAcceptDrops(False)
        self.banner = MessageBanner()
        self.run_bar = RunBar()
        middle = QWidget()
        middle_layout = QVBoxLayout(middle)
        middle_layout.setContentsMargins(0, 0, 0, 0)
        middle_layout.addWidget(self.view, 1)
        self.banner.overlay(self.view)
        middle_layout.addWidget(self.run_bar)
        return middle

    def _settings_column(self) -> QScrollArea:
        """The settings panel on the state, in a column that scrolls down, never sideways."""
        self.controls = ControlsPanel(
            self.state, show_all_layers=self.store.show_all_layers(), show_more=self.store.show_more_settings()
        )
        weights_file = self.store.weights_file()
        if weights_file is not None:
            current = self.controls.settings().weights
            self.controls.set_weights_file(weights_file)
            self.controls.set_weights(current)
        right = QScrollArea()
        right.setWidgetResizable(True)
        right.setWidget(self.controls)
        # As wide as its rows need, and never scrolled sideways.
        right.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        right.setMinimumWidth(
            self.controls.minimumSizeHint().width() + right.verticalScrollBar().sizeHint().width()
            + 2 * right.frameWidth()
        )  # fmt: skip
        return right

    def _build_docks(self) -> None:
        """The panels beside the picture: the photo and styles, the history, the loss, the regions, the queue."""
        self.inputs_dock = self._dock(
            "Photo and styles", "inputsDock", self.inputs, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        self.inputs_dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable)  # always there
        self.loss_plot = LossPlot()
        self.history = HistoryStrip()
        self.history_dock = self._dock("History", "historyDock", self.history, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.history_dock.dockLocationChanged.connect(
            lambda area: self.history.lay_out(vertical=area in _SIDE_AREAS)
        )  # fmt: skip
        self.loss_dock = self._dock("Loss", "lossDock", self.loss_plot, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.history.lay_out(vertical=True)
        self.regions_panel = RegionsPanel(
            self.regions, self.state, lambda: [row.item.name for row in self.inputs.style_rows]
        )
        self.regions_dock = self._dock(
            "Regions", "regionsDock", self.regions_panel, Qt.DockWidgetArea.RightDockWidgetArea
        )
        self.queue_panel = QueuePanel(self.queue)
        self.queue_dock = self._dock("Queue", "queueDock", self.queue_panel, Qt.DockWidgetArea.RightDockWidgetArea)

    def _dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def export(self) -> None:
        """Export (Ctrl+S): the picture shown; during a run, the picture being painted: the run stops, and the
        dialog opens on its picture so far."""
        if self.runs.stop_and_then(lambda entry: self.files.export_dialog(entry=entry)):
            self.show_info("Stopping the run: you export the picture so far")
            return
        self.files.export_dialog()

    def reset_layout(self) -> None:
        """The panels as they are at first (View → Reset layout): the picture first, the photo and styles over the
        history and loss curves in a column as narrow as their rows allow, regions and the queue closed."""
        # Taken out and put back, not moved: tabifying docks already in a tab group leaves Qt's old tab bar drawn
        # over the column (and a hidden pair's bar over the status bar).
        for dock in (self.inputs_dock, self.history_dock, self.loss_dock, self.regions_dock, self.queue_dock):
            self.removeDockWidget(dock)
            dock.setFloating(False)
        left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
        self.addDockWidget(left, self.inputs_dock)
        self.addDockWidget(left, self.history_dock)
        self.splitDockWidget(self.inputs_dock, self.history_dock, Qt.Orientation.Vertical)
        self.tabifyDockWidget(self.history_dock, self.loss_dock)
        for dock in (self.inputs_dock, self.history_dock, self.loss_dock):
            dock.show()
        self.history_dock.raise_()
        for unopened in (self.regions_dock, self.queue_dock):  # closed until used (painting, queueing)
            self.addDockWidget(right, unopened)
            unopened.hide()
        column = self.inputs.minimumSizeHint().width()
        self.resizeDocks([self.inputs_dock], [column], Qt.Orientation.Horizontal)
        height = self.height()
        self.resizeDocks([self.inputs_dock, self.history_dock], [height * 3 // 5, height * 2 // 5],
                         Qt.Orientation.Vertical)  # fmt: skip

    def _fit_to_screen(self) -> None:
        """Open at ``DEFAULT_SIZE``, or the whole of a smaller screen, in its middle."""
        screen = self.screen().availableGeometry()
        width, height = min(DEFAULT_SIZE[0], screen.width()), min(DEFAULT_SIZE[1], screen.height())
        self.resize(width, height)
        self.move(screen.x() + (screen.width() - width) // 2, screen.y() + (screen.height() - height) // 2)

    def _connect(self) -> None:
        """Wire the parts to one another: the commands, the state, the controls, the runs, the history."""
        self._connect_commands()
        self._connect_state()
        self._connect_controls()
        self._connect_runs()
        self._connect_history()
        self._connect_messages()
        self.painting.connect()

    def _connect_commands(self) -> None:
        """Each command (menu, toolbar, shortcut) to what it does."""
        a = self.commands
        for action, slot in (
            (a.open, self.inputs.open_content),
            (a.add_style, self.inputs.add_style_dialog),
            (a.paste, self.inputs.paste_content),
            (a.paste_style, self.inputs.paste_style),
            (a.export, self.export),
            (a.save_preset, self.files.save_preset_dialog),
            (a.load_preset, self.files.load_preset_dialog),
            (a.quit, self.close),
            (a.start, self.runs.start),
            (a.tune, self.runs.tune),
            (a.stop, self.runs.stop),
            (a.stop, self.video.stop),
            (a.style_clip, lambda: self.video.start()),
            (a.fit, self.view.fit),
            (a.reset_layout, self.reset_layout),
            (a.actual_size, self.view.actual_size),
            (a.zoom_in, lambda: self.view.zoom_by(1.25)),
            (a.zoom_out, lambda: self.view.zoom_by(0.8)),
            (a.split, lambda: self.view.set_split(a.split.isChecked())),
            (a.play, self.video.toggle_play),
            (a.undo, self.regions.undo_stack.undo),
            (a.redo, self.regions.undo_stack.redo),
            (a.add_region, self.painting.add_region),
            (a.load_mask, self.painting.load_mask_dialog),
            (a.brush_smaller, lambda: self.painting.resize_brush(1 / 1.25)),
            (a.brush_larger, lambda: self.painting.resize_brush(1.25)),
            (a.add_to_queue, lambda: self.intake.add()),
            (a.apply_to_folder, self.intake.apply_to_folder_dialog),
            (a.reset, self.reset_settings),
            *((action, functools.partial(self.apply_preset, name)) for name, action in a.presets.items()),
            (a.about, self.about),
        ):
            action.triggered.connect(slot)
        a.timelapse.setChecked(self.store.timelapse_folder() is not None)
        a.timelapse.toggled.connect(lambda on: a.timelapse.setChecked(self.files.choose_timelapse_folder(on)))

    def _connect_state(self) -> None:
        """The state's changes to the views that show them, and the live settings to the run under way."""
        self.state.photo_changed.connect(self._content_changed)
        self.state.photo_changed.connect(self.video.show_result)
        self.state.styles_changed.connect(lambda _: self._inputs_changed())
        self.state.shown_changed.connect(self._shown_changed)
        self.state.commands_changed.connect(self._show_commands)
        self.state.setting_changed.connect(self._setting_changed)
        # An error stays until the user's next action; connected first, so that one the action causes stays.
        self.state.setting_changed.connect(lambda *_: self.banner.clear_error())
        self.controller.follow(self.state, USER, self.show_error)

    def _connect_controls(self) -> None:
        """The settings panel's buttons and what it remembers opened."""
        self.controls.chooseWeightsFile.connect(self.files.choose_weights_file)
        self.controls.resetRequested.connect(self.reset_settings)
        self.controls.savePresetRequested.connect(self.files.save_preset_dialog)
        self.controls.loadPresetRequested.connect(self.files.load_preset_dialog)
        self.controls.showAllLayersToggled.connect(self.store.save_show_all_layers)
        self.controls.showMoreToggled.connect(self.store.save_show_more_settings)

    def _connect_runs(self) -> None:
        """The run bar's buttons, and a run's reports to the user's runs."""
        self.run_bar.startRequested.connect(self.runs.start)
        self.run_bar.stopRequested.connect(self.runs.stop)
        self.run_bar.stopRequested.connect(self.video.stop)
        self.controller.planned.connect(self.runs.on_planned)
        self.controller.progressed.connect(self.runs.on_progress)
        self.controller.preview.connect(self.runs.on_preview)
        self.controller.finished.connect(self.runs.on_finished)
        self.controller.status_changed.connect(self.state.set_picture_run)
        self.controller.started.connect(lambda _: self.video.player.pause())  # the run's previews take the picture
        if self.instant is not None:
            self.instant.shown.connect(lambda entry: self.run_bar.show_text(look_note(entry)))
            self.instant.unavailable.connect(self.show_info)

    def _connect_history(self) -> None:
        """The history's entries: shown, compared, restored, exported, removed."""
        self.history.entrySelected.connect(self.state.show)
        self.history.compareRequested.connect(self.compare_entry)
        self.history.restoreRequested.connect(
            lambda e: self.apply_settings(e.settings, "Settings restored from the history")
        )
        self.history.exportRequested.connect(lambda e: self.files.export_dialog(entry=e))
        self.history.removeRequested.connect(self.kept.remove)

    def _connect_messages(self) -> None:
        """What the parts tell the user, and the zoom in the status bar."""
        self.view.zoomChanged.connect(lambda zoom: self.zoom_label.setText(f"{zoom * 100:.0f} %"))
        self.inputs.error.connect(self.show_error)
        self.history.failed.connect(self.show_error)
        self.documents.info.connect(self.show_info)
        self.documents.error.connect(self.show_error)
        self.documents.exportFinished.connect(self.files.exported)
        self.queue.message.connect(self.show_info)
        self.queue.error.connect(self.show_error)

    # -- inputs ----------------------------------------------------------------------

    def _content_changed(self, item: InputImage | None) -> None:
        """A new photo (the state shows it, not the last result: that stays in the history); the message about the
        last one goes."""
        self.banner.clear()
        if item is not None:
            if self.regions.set_photo(*item.image.size):
                self.show_info(
                    "The regions were cleared: they were painted on the previous photo (Ctrl+Z brings nothing back)"
                )
            self.painting.show_brush()
            self.controls.set_photo_size(*item.image.size)
        self._inputs_changed()

    def _inputs_changed(self) -> None:
        self.regions.set_style_count(len(self.state.styles))
        self.regions_panel.refresh()
        self.runs.update_needs()
        self._save_timer.start()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if can_accept(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        if self.files.drop(event.mimeData()):
            event.acceptProposedAction()

    # -- settings ----------------------------------------------------------------------

    def apply_settings(self, settings: Settings, message: str = "") -> None:
        """Show ``settings`` in the controls (validated first: nothing half-applied)."""
        try:
            settings.validate()
        except SettingsError as exc:
            self.show_error(str(exc))
            return
        self.controls.set_settings(settings)
        if message:
            self.show_info(message)

    def _setting_changed(self, name: str, value: object) -> None:
        """One setting changed (the run under way takes a live one: ``RunController.follow``)."""
        if name == "weights":
            self._update_weights_label()
        planned = self.state.settings.plan_key()
        if planned != self._planned:  # a weight, a layer's included, plans nothing
            self._planned = planned
            self.runs.update_needs()
        self._save_timer.start()

    def apply_preset(self, name: str) -> None:
        """A built-in preset over the settings shown (the size, weights, device and loss weights stay)."""
        self.state.load(settings_mod.with_preset(self.state.settings, name))
        self.show_info(f"Preset: {settings_mod.PRESET_NAMES[name]}")

    def reset_settings(self) -> None:
        """Defaults for everything that shapes the picture; the weights choice stays."""
        weights = self.state.settings.weights
        self.state.load(dataclasses.replace(settings_mod.DEFAULTS, weights=weights))
        self.show_info("Settings reset to their defaults")

    def _shown_changed(self, entry: HistoryEntry | None) -> None:
        """The state shows another result, or the photo: the picture area follows, the comparison ends."""
        self._compare = None
        photo = self.state.photo
        before = pil_to_qimage(photo.image) if photo is not None else None
        self.view.set_before(before)
        if entry is not None:
            self.view.set_image(pil_to_qimage(entry.result))
            if self.kept.holds(entry) and not self.controller.running:  # the run bar says which picture this is
                self.run_bar.show_text(f"From the history: {entry.summary().splitlines()[0]}")
        elif before is not None:
            self.view.set_image(before)

    # -- history and view ------------------------------------------------------------------

    def compare_entry(self, entry: HistoryEntry) -> None:
        """Split view: this history entry on the left, the current result on the right."""
        self._compare = entry
        self.view.set_before(pil_to_qimage(entry.result))
        self.commands.split.setChecked(True)
        self.view.set_split(True)
        self.show_info("Comparing: the history entry is on the left, the current result on the right")

    # -- state and messages --------------------------------------------------------------------

    def _show_queue(self) -> None:
        self.queue_dock.show()
        self.queue_dock.raise_()

    def show_error(self, text: str) -> None:
        self.banner.show_message(text, "error")
        self.statusBar().showMessage(text.splitlines()[0], 8000)

    def show_info(self, text: str) -> None:
        self.banner.show_message(text, "info")
        self.statusBar().showMessage(text, 6000)

    def _update_weights_label(self) -> None:
        """The weights the run uses, or those chosen, and where they are not on this computer, what Start will do."""
        running = self.runs.running_weights
        choice, label = running or (self.controls.settings().weights, "")
        text, missing = f"Weights: {label or describe(choice)}", None if running else missing_weights(choice)
        tip = ""
        if missing is not None:
            text += f" — {missing}"
            tip = "Start offers the download, or choose" if choice == IMAGENET else "Choose"
            tip += " weights under Computation → Weights"
        self.weights_label.setToolTip(tip)
        self.weights_label.setText(text)
        warn = choice == UNTRAINED or missing is not None
        self.weights_label.setStyleSheet("color: #9a4c00; font-weight: bold;" if warn else "")

    def _show_commands(self) -> None:
        """What can be done now, as the state says (it tells when that may have changed)."""
        state, a = self.state, self.commands
        a.start.setEnabled(state.can_start)
        a.tune.setEnabled(state.can_start)
        a.stop.setEnabled(state.can_stop)
        a.style_clip.setEnabled(state.can_render_video)
        a.play.setEnabled(state.can_play)
        self.run_bar.set_enabled(can_start=state.can_start, can_stop=state.can_stop)
        a.export.setEnabled(state.can_export)
        self._update_weights_label()

    def _persist(self) -> None:
        self.store.save_settings(self.state.settings)
        self.store.save_video_options(self.state.video)
        self.store.save_print_dpi(self.state.print_dpi)
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
        if self.instant is not None:
            self.instant.wait()
        self.video.wait()
        self.queue.wait()
        self.queue.queue.close()
        self.documents.wait()
        self.kept.wait()
        self._persist()
        self.store.save_geometry(self.saveGeometry(), self.saveState(LAYOUT_VERSION))
        self.store.sync()
        super().closeEvent(event)
