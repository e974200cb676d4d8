"""The window's regions: painting on the photo, the overlay, the style map, masks and restored regions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QDockWidget, QFileDialog, QWidget

from ..core import RegionError, Regions, regions_from_picture
from .runner import USER

if TYPE_CHECKING:
    from .actions import WindowActions
    from .feedback import Feedback
    from .image_view import ImageView
    from .regions_panel import RegionEditor, RegionsPanel
    from .runner import RunController
    from .state import WindowState


class RegionsWiring:
    """The regions' editor, panel and overlay wired to the window's picture, commands and run.

    Args:
        regions: the editor; ``panel`` and ``dock``: its panel and the dock that holds it.
        actions: the window's commands (paint, eraser, undo, the style map, show regions).
        view: the picture painted on; ``state``: the photo (its folder, where the dialogs open), the styles and the
            settings (the style layers).
        controller: the run that takes painted regions and sends the style map.
        feedback, parent: tells the user; the dialogs' parent.
    """

    def __init__(
        self,
        *,
        regions: RegionEditor,
        panel: RegionsPanel,
        dock: QDockWidget,
        actions: WindowActions,
        view: ImageView,
        state: WindowState,
        controller: RunController,
        feedback: Feedback,
        parent: QWidget,
    ) -> None:
        self.regions, self.panel, self.dock, self.actions = regions, panel, dock, actions
        self.view, self.state, self.controller = view, state, controller
        self.feedback, self.parent = feedback, parent

    def connect(self) -> None:
        a, editor, panel = self.actions, self.regions, self.panel
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
        panel.paintToggled.connect(self.paint_mode)
        panel.loadMaskRequested.connect(self.load_mask_dialog)
        self.state.brush_changed.connect(lambda name, _: self.show_brush() if name == "radius" else None)
        self.view.strokeStarted.connect(self.stroke_started)
        self.view.strokeMoved.connect(editor.stroke_to)
        self.view.strokeEnded.connect(editor.end_stroke)
        editor.painting.connect(self.show_regions)
        editor.changed.connect(self.regions_changed)
        a.style_map.toggled.connect(lambda _: self._choose_style_map())
        a.show_regions.toggled.connect(lambda _: self.show_regions())
        panel.map_layer.activated.connect(lambda _: self._choose_style_map())
        self.state.style_map_changed.connect(self._show_style_map)
        self.state.setting_changed.connect(lambda name, _: self.show_map_layers() if name == "style_layers" else None)
        self.show_map_layers()

    def show_map_layers(self) -> None:
        """The style map's layer choice: the style layers in use."""
        box = self.panel.map_layer
        layers = list(self.state.settings.active_style_layers)
        if [box.itemText(i) for i in range(box.count())] == layers:
            return
        current = box.currentText()
        box.clear()
        box.addItems(layers)
        if current in layers:
            box.setCurrentText(current)
        elif layers:
            box.setCurrentIndex(len(layers) // 2)
        self._choose_style_map()

    def _choose_style_map(self) -> None:
        """The Style map command or its layer's choice moved: the state takes the layer (None: off)."""
        layer = self.panel.map_layer.currentText() or None
        self.state.set_style_map(layer if self.actions.style_map.isChecked() else None)

    def _show_style_map(self, layer: str | None) -> None:
        """The state's style map changed (the runs take it from the state: ``RunController.follow``): the command
        says so, the picture loses an old one."""
        blocked = self.actions.style_map.blockSignals(True)
        self.actions.style_map.setChecked(layer is not None)
        self.actions.style_map.blockSignals(blocked)
        if layer is None:
            self.view.set_overlay("style map", None)
        elif self.controller.running:
            self.feedback.info(f"The style map of {layer} appears with the next preview")
        else:
            self.feedback.info(f"The style map of {layer} is drawn over the preview while a run goes on")

    def add_region(self) -> None:
        if self.state.photo is None:
            self.feedback.error("Open a photo first: regions are painted on it.")
            return
        self.regions.add_region()
        self.dock.show()
        self.actions.paint.setChecked(True)

    def paint_mode(self, on: bool) -> None:
        if on and self.state.photo is not None:
            # Paint on the photo: a result may be of another size, but regions belong to the photo.
            if not self.regions.regions:
                self.regions.add_region()
            self.dock.show()
        self.view.set_painting(on)
        self.show_brush()
        self.show_regions()

    def show_brush(self) -> None:
        width = self.regions.size[0]
        self.view.set_brush(self.state.brush.radius / max(width, 1))

    def resize_brush(self, factor: float) -> None:
        self.state.set_brush("radius", self.state.brush.resized(factor))

    def stroke_started(self, point: object) -> None:
        if not self.regions.begin_stroke(point):  # type: ignore[arg-type]
            self.feedback.info("Choose a region to paint in the Regions panel, or add one (Ctrl+Shift+N)")

    def show_regions(self) -> None:
        # While painting, and on the user's toggle (R): a result or the history is seen clean otherwise.
        shown = self.view.painting() or (self.actions.show_regions.isChecked() and bool(self.regions.regions))
        self.view.set_overlay("regions", self.regions.overlay() if shown else None)

    def regions_changed(self) -> None:
        """The editor changed the regions (it keeps their undo): the state takes them, the run under way too."""
        self.state.set_regions(self.regions.regions if self.regions.regions else None)
        if not self.regions.regions:
            self.state.set_mask(None)  # no regions left: the mask is no longer read
        self.show_regions()
        if self.controller.running and self.controller.owner == USER:
            try:
                self.controller.update_regions(self.state.regions_for_run())
            except RegionError as exc:
                self.feedback.error(f"The regions cannot be used: {exc}.")

    def load_mask_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self.parent,
            "Load region mask",
            str(self.state.open_dir()),
            "Pictures (*.png *.bmp *.tif *.tiff *.webp);;All files (*)",
        )
        if path:
            self.load_mask(Path(path))

    def load_mask(self, path: Path) -> bool:
        """Regions from a mask picture: one per colour (black unpainted), or one from a greyscale picture."""
        content = self.state.photo
        if content is None:
            self.feedback.error("Open a photo first: the mask is fitted to it.")
            return False
        try:
            regions, notice = regions_from_picture(path, max(len(self.state.styles), 1), content.image.size)
        except RegionError as exc:
            self.feedback.error(str(exc))
            return False
        self.regions.replace(regions, f"Load {path.name}")
        self.state.set_mask(path)  # an input of the runs made with these regions: no output may replace it
        self.dock.show()
        self.feedback.info(notice or f"{len(regions)} region(s) loaded from {path.name}")
        return True

    def restore(self, regions: Regions | None, source: str) -> None:
        if regions is None:
            return
        if self.state.photo is None:
            self.feedback.error(f"{source} has regions, but there is no photo to put them on.")
            return
        scaled = regions.size != self.regions.size
        self.regions.replace(regions, f"Regions from {source}")
        self.dock.show()
        if scaled:
            width, height = self.regions.size
            self.feedback.info(f"Regions restored from {source}, scaled to the photo's {width}×{height}")
