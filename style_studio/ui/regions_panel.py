"""Painted regions in the window: the editor (masks, strokes, undo) and its panel.

``RegionEditor`` owns the photo's ``Regions`` and a ``QUndoStack``: every
change (a stroke, a fill, a region added, renamed or given another style, a
mask loaded) is a command that can be undone and redone. The brush, the eraser
and the region being painted are the window's state's (``WindowState.brush``,
``selected_region``): the editor paints with them, the panel shows and sets
them. The picture view (``ImageView``) sends the strokes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
from PySide6.QtCore import QObject, QPointF, Signal
from PySide6.QtGui import QColor, QIcon, QImage, QPixmap, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from ..core import FEATHER, PALETTE, STRENGTH, Region, Regions, Stroke, cleared, described, filled, parse_colour
from .settings_form import FormBinding, control_for, slider_for
from .state import Brush, WindowState

KEEP = "keep"
#: The longest side of the regions' overlay, in pixels.
OVERLAY_SIDE = 1024
ALL_STYLES = "all"


class _MasksCommand(QUndoCommand):
    """Masks changed inside ``area``: before and after, for undo and redo."""

    def __init__(
        self, editor: RegionEditor, text: str, area: tuple[slice, slice], before: np.ndarray, after: np.ndarray
    ) -> None:
        super().__init__(text)
        self._editor, self._area, self._before, self._after = editor, area, before, after
        self._first = True

    def redo(self) -> None:
        if self._first:  # already painted while the stroke was drawn
            self._first = False
            self._editor._committed()
            return
        self._editor._put_masks(self._area, self._after)

    def undo(self) -> None:
        self._editor._put_masks(self._area, self._before)


class _RegionsCommand(QUndoCommand):
    """The whole ``Regions`` replaced (a region added, removed or changed, a mask loaded)."""

    def __init__(self, editor: RegionEditor, text: str, before: Regions, after: Regions) -> None:
        super().__init__(text)
        self._editor, self._before, self._after = editor, before, after

    def redo(self) -> None:
        self._editor._put(self._after)

    def undo(self) -> None:
        self._editor._put(self._before)


class RegionEditor(QObject):
    """The photo's regions, painted with strokes, with undo and redo; the brush and the region painted are
    ``state``'s.

    Signals:
        changed(): the regions changed (a stroke ended, a region changed, undo, redo): the run takes them.
        painting(): a stroke in progress changed the masks (redraw the overlay only).
    """

    changed = Signal()
    painting = Signal()

    def __init__(self, state: WindowState, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.undo_stack = QUndoStack(self)
        self.regions = Regions.empty(1, 1)
        self.style_count = 1
        self._stroke: Stroke | None = None

    @property
    def selected(self) -> int:
        """The region being painted (the state's; -1: none)."""
        return self.state.selected_region

    # -- the photo and the styles ------------------------------------------------------

    def set_photo(self, width: int, height: int) -> bool:
        """A new photo: its regions start empty (the old ones were painted on another). True if some were lost."""
        had = bool(self.regions)
        self.undo_stack.clear()
        self._put(Regions.empty(width, height))
        return had

    def set_style_count(self, count: int) -> None:
        """Styles were added or removed: each region's blend follows (undo history kept)."""
        self.style_count = max(count, 1)
        if self.regions:
            self._put(self.regions.for_style_count(self.style_count))

    @property
    def size(self) -> tuple[int, int]:
        return self.regions.size

    def replace(self, regions: Regions | None, text: str = "Load regions") -> None:
        """Use ``regions`` (fitted to the photo and the styles first), undoably."""
        width, height = self.size
        new = regions.resized(width, height) if regions else Regions.empty(width, height)
        new = new.for_style_count(self.style_count)
        self.undo_stack.push(_RegionsCommand(self, text, self.regions, new))
        self.select(0 if new else -1)

    # -- regions --------------------------------------------------------------------------

    def add_region(self) -> int:
        """A new, unpainted region with the next colour and the first style; returns its index."""
        number = len(self.regions) + 1
        used = {r.colour for r in self.regions.regions}
        colour = next((parse_colour(c) for c in PALETTE if parse_colour(c) not in used), parse_colour(PALETTE[0]))
        blend = (1.0,) + (0.0,) * (self.style_count - 1)
        region = Region(f"Region {number}", colour, blend=blend)
        self.undo_stack.push(_RegionsCommand(self, "Add region", self.regions, self.regions.added(region)))
        self.select(len(self.regions) - 1)
        return self.selected

    def remove_region(self, index: int) -> None:
        if 0 <= index < len(self.regions):
            name = self.regions.regions[index].name
            self.undo_stack.push(_RegionsCommand(self, f"Remove {name}", self.regions, self.regions.removed(index)))
            self.select(min(index, len(self.regions) - 1))

    def change_region(self, index: int, region: Region, text: str = "Change region") -> None:
        if 0 <= index < len(self.regions) and self.regions.regions[index] != region:
            self.undo_stack.push(_RegionsCommand(self, text, self.regions, self.regions.with_region(index, region)))

    def set_feather(self, feather: float) -> None:
        if feather != self.regions.feather:
            after = Regions(self.regions.regions, self.regions.masks, feather)
            self.undo_stack.push(_RegionsCommand(self, "Edge softness", self.regions, after))

    def select(self, index: int) -> None:
        """Paint region ``index`` next (-1, or one that is not there: none)."""
        self.state.select_region(index if 0 <= index < len(self.regions) else -1)

    def fill(self, index: int) -> None:
        """The selected region takes all of the unpainted area."""
        self._whole_masks(filled(self.regions.masks, index), "Fill")

    def clear(self, index: int) -> None:
        self._whole_masks(cleared(self.regions.masks, index), "Clear region")

    def _whole_masks(self, masks: np.ndarray, text: str) -> None:
        area = (slice(None), slice(None))
        before = self.regions.masks.copy()
        self.regions.masks[...] = masks
        self.regions._digest.clear()
        self.undo_stack.push(_MasksCommand(self, text, area, before, masks.copy()))

    # -- strokes (in the picture's relative coordinates, 0 to 1) ---------------------------------

    def can_paint(self) -> bool:
        return self.selected >= 0 or (self.state.brush.erasing and bool(self.regions))

    def begin_stroke(self, point: QPointF) -> bool:
        """Start a stroke at ``point`` with the state's brush; False when there is nothing to paint (no region
        chosen)."""
        if not self.can_paint():
            return False
        brush = self.state.brush
        self._stroke = Stroke(
            self.regions.masks, max(self.selected, 0), brush.radius, brush.hardness, erase=brush.erasing
        )
        self.stroke_to(point)
        return True

    def stroke_to(self, point: QPointF) -> None:
        if self._stroke is None:
            return
        width, height = self.size
        self._stroke.to(point.x() * width, point.y() * height)
        self.regions._digest.clear()
        self.painting.emit()

    def end_stroke(self) -> None:
        stroke, self._stroke = self._stroke, None
        if stroke is None:
            return
        patches = stroke.patches()
        if patches is not None:
            area, before, after = patches
            self.undo_stack.push(_MasksCommand(self, "Erase" if stroke.erase else "Paint", area, before, after))

    # -- for the commands ----------------------------------------------------------------------

    def _put(self, regions: Regions) -> None:
        self.regions = regions
        if self.selected >= len(regions):
            self.select(len(regions) - 1)
        self.changed.emit()

    def _put_masks(self, area: tuple[slice, slice], masks: np.ndarray) -> None:
        self.regions.masks[(slice(None), *area)] = masks
        self.regions._digest.clear()
        self.changed.emit()

    def _committed(self) -> None:
        self.changed.emit()

    # -- drawing -----------------------------------------------------------------------------------

    def overlay(self) -> QImage | None:
        """The regions as a translucent picture over the photo (each in its colour), or None when there are none."""
        if not self.regions:
            return None
        # Redrawn on every move of a stroke: at most OVERLAY_SIDE pixels on a side, stretched over the picture.
        step = max(1, -(-max(self.regions.masks.shape[1:]) // OVERLAY_SIDE))
        masks = self.regions.masks[:, ::step, ::step].astype(np.float32) / 255  # (R, H, W)
        colours = np.array([r.colour for r in self.regions.regions], np.float32)  # (R, 3)
        coverage = masks.sum(0).clip(0, 1)
        rgb = np.einsum("rhw,rc->hwc", masks, colours) / np.maximum(coverage, 1e-6)[..., None]
        rgba = np.empty((*coverage.shape, 4), np.uint8)
        rgba[..., :3] = rgb.clip(0, 255).astype(np.uint8)
        rgba[..., 3] = (coverage * 150).astype(np.uint8)
        height, width = coverage.shape
        image = QImage(rgba.data, width, height, 4 * width, QImage.Format.Format_RGBA8888)
        return image.copy()


def style_map_image(values: np.ndarray) -> QImage:
    """A style map (h, w) in [0, 1] as a translucent heat map: clear where near the style, red-yellow where far."""
    v = np.clip(values, 0, 1)
    rgba = np.empty((*v.shape, 4), np.uint8)
    rgba[..., 0] = 255
    rgba[..., 1] = (255 * v).astype(np.uint8)
    rgba[..., 2] = 0
    rgba[..., 3] = (210 * np.sqrt(v)).astype(np.uint8)
    height, width = v.shape
    return QImage(rgba.data, width, height, 4 * width, QImage.Format.Format_RGBA8888).copy()


def _swatch(colour: tuple[int, int, int], keep: bool = False) -> QIcon:
    pixmap = QPixmap(14, 14)
    pixmap.fill(QColor(*colour))
    return QIcon(pixmap)


class RegionsPanel(QWidget):
    """The regions: list, what each gets, the brush; and a hint of what unpainted areas get.

    It shows the editor's regions and the state's brush and selection, and writes them: the region's name, what
    it gets, its strength and the regions' edge through the editor (each an undoable command); the brush and the
    region painted into the state. Every value control is made from its ``About``.

    Signals:
        loadMaskRequested(): the user asked to load a mask file.
        paintToggled(bool): paint mode on or off.
    """

    loadMaskRequested = Signal()
    paintToggled = Signal(bool)

    def __init__(self, editor: RegionEditor, state: WindowState, style_names: Callable[[], Sequence[str]]) -> None:
        super().__init__()
        self.editor, self.state = editor, state
        self._style_names = style_names
        self._updating = False
        layout = QVBoxLayout(self)
        layout.addWidget(self._region_list())
        layout.addLayout(self._list_buttons())
        form = QFormLayout()
        self._region_form(form)
        form.addRow(self._tools())
        self._brush_form(form)
        layout.addLayout(form)
        self.hint = QLabel("Unpainted areas get the global style (the blend under Styles).")
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)
        layout.addLayout(self._map_row())
        layout.addStretch(1)
        self._connect_buttons()
        self._connect_region_form()
        self._bind_brush()
        editor.changed.connect(self.refresh)
        state.region_selected.connect(self._selected)
        self.refresh()

    # -- building ----------------------------------------------------------------------------

    def _region_list(self) -> QListWidget:
        self.list = QListWidget()
        self.list.setToolTip(
            "Regions: each gets a style (or a blend), or keeps the photo. Unpainted areas get the global style"
        )
        self.list.setMaximumHeight(130)
        return self.list

    def _list_buttons(self) -> QHBoxLayout:
        self.add_button = QPushButton("Add")
        self.add_button.setToolTip("A new region to paint (Ctrl+Shift+N)")
        self.remove_button = QPushButton("Remove")
        self.load_button = QPushButton("Load mask…")
        self.load_button.setToolTip("A colour-coded PNG (a region per colour) or a greyscale one (one region)")
        return _in_a_row(self.add_button, self.remove_button, self.load_button)

    def _region_form(self, form: QFormLayout) -> None:
        """What the selected region is called, gets and how strongly."""
        self.name = QLineEdit()
        self.gets = QComboBox()
        self.gets.setToolTip("What the region gets: one style, all styles blended as under Styles, or the photo kept")
        self._strength = control_for("strength", STRENGTH, "float")
        self.strength = self._strength.widget
        form.addRow("Name", self.name)
        form.addRow("Gets", self.gets)
        form.addRow(STRENGTH.label, self.strength)

    def _tools(self) -> QHBoxLayout:
        self.paint_button = QPushButton("Paint")
        self.paint_button.setCheckable(True)
        self.paint_button.setToolTip("Paint the selected region on the picture (P); right-drag pans")
        self.erase_button = QPushButton(described(Brush)["erasing"].label)
        self.erase_button.setCheckable(True)
        self.erase_button.setToolTip(described(Brush)["erasing"].tooltip)
        self.fill_button = QPushButton("Fill rest")
        self.fill_button.setToolTip("The selected region takes every unpainted part of the picture")
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("Unpaint the selected region")
        return _in_a_row(self.paint_button, self.erase_button, self.fill_button, self.clear_button)

    def _brush_form(self, form: QFormLayout) -> None:
        """The brush's size and soft edge (the state's), and the regions' edge (the editor's, undoable)."""
        about = described(Brush)
        self.brush_fields = {name: slider_for(name, about[name], annotation)
                             for name, annotation in (("radius", "int"), ("softness", "float"))}  # fmt: skip
        self.brush_size = self.brush_fields["radius"].widget
        self.softness = self.brush_fields["softness"].widget
        self._feather = slider_for("feather", FEATHER, "float")
        self.feather = self._feather.widget
        # One undoable change when the slider is let go (or stepped by the keys), not one per pixel dragged.
        cast(QSlider, self.feather).setTracking(False)
        for control in (*self.brush_fields.values(), self._feather):
            form.addRow(control.about.label, control.widget)

    def _map_row(self) -> QFormLayout:
        self.map_layer = QComboBox()
        self.map_layer.setToolTip(
            "Style map (M): where the picture is still furthest from the style at this layer, "
            "drawn over the preview while a run goes on. Raise this layer's weight or paint there"
        )
        row = QFormLayout()
        row.addRow("Style map layer", self.map_layer)
        return row

    # -- wiring ------------------------------------------------------------------------------

    def _connect_buttons(self) -> None:
        self.add_button.clicked.connect(self._add)
        self.remove_button.clicked.connect(lambda: self.editor.remove_region(self.editor.selected))
        self.load_button.clicked.connect(self.loadMaskRequested)
        self.paint_button.toggled.connect(self._paint_toggled)
        self.erase_button.toggled.connect(lambda on: self.state.set_brush("erasing", on))
        self.fill_button.clicked.connect(lambda: self.editor.fill(self.editor.selected))
        self.clear_button.clicked.connect(lambda: self.editor.clear(self.editor.selected))

    def _connect_region_form(self) -> None:
        self.list.currentRowChanged.connect(self._row_changed)
        self.name.editingFinished.connect(self._edited)
        self.gets.activated.connect(lambda _: self._edited())
        for signal in self._strength.changes:
            signal.connect(lambda *_: self._edited())
        for signal in self._feather.changes:
            signal.connect(lambda *_: self._feather_moved())

    def _bind_brush(self) -> None:
        """The brush's sliders write the state's brush and show it; the eraser's button follows it too."""
        binding = FormBinding(self.brush_fields, self.state.set_brush)
        brush = self.state.brush
        for name in self.brush_fields:
            binding.show(name, getattr(brush, name))
        self.state.brush_changed.connect(binding.show)
        self.state.brush_changed.connect(lambda name, on: self._erasing(on) if name == "erasing" else None)
        self._erasing(brush.erasing)

    def _add(self) -> None:
        self.editor.add_region()
        self.paint_button.setChecked(True)

    def _paint_toggled(self, on: bool) -> None:
        if not on:
            self.state.set_brush("erasing", False)
        self.paintToggled.emit(on)

    def _erasing(self, on: bool) -> None:
        """The state's eraser turned on or off: its button says so, and painting is on while it erases."""
        self.erase_button.setChecked(on)
        if on:
            self.paint_button.setChecked(True)

    def _feather_moved(self) -> None:
        if not self._updating:
            self.editor.set_feather(self._feather.read())

    # -- showing -----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Show the editor's regions."""
        self._updating = True
        try:
            names = list(self._style_names())
            self.list.clear()
            for region in self.editor.regions.regions:
                item = QListWidgetItem(_swatch(region.colour), f"{region.name}: {region.describe(names)}")
                self.list.addItem(item)
            self.list.setCurrentRow(self.editor.selected)
            self.gets.clear()
            for number, name in enumerate(names):
                self.gets.addItem(f"Style {number + 1}: {name}", number)
            if len(names) > 1:
                self.gets.addItem("All styles, blended", ALL_STYLES)
            self.gets.addItem("Keep the photo", KEEP)
            self._feather.show(self.editor.regions.feather)
            self._show_selected()
        finally:
            self._updating = False

    def _selected(self, index: int) -> None:
        if self.list.currentRow() != index:
            self._updating = True
            self.list.setCurrentRow(index)
            self._updating = False
        self._show_selected()

    def _row_changed(self, row: int) -> None:
        if not self._updating:
            self.editor.select(row)

    def _show_selected(self) -> None:
        index = self.editor.selected
        has = 0 <= index < len(self.editor.regions)
        for widget in (self.name, self.gets, self.strength, self.remove_button, self.fill_button, self.clear_button):
            widget.setEnabled(has)
        if not has:
            return
        was, self._updating = self._updating, True
        region = self.editor.regions.regions[index]
        self.name.setText(region.name)
        self.gets.setCurrentIndex(self.gets.findData(_gets_of(region)))
        self._strength.show(region.strength)
        self.strength.setEnabled(not region.keep)
        self._updating = was

    def _edited(self) -> None:
        index = self.editor.selected
        if self._updating or not 0 <= index < len(self.editor.regions):
            return
        region = self.editor.regions.regions[index]
        gets = self.gets.currentData()
        count = self.editor.style_count
        keep = gets == KEEP
        if keep:
            blend = region.blend
        elif gets == ALL_STYLES:
            blend = (1.0,) * count
        else:
            blend = tuple(1.0 if n == gets else 0.0 for n in range(count))
        name = self.name.text().strip() or region.name
        changed = Region(name, region.colour, keep, blend, self._strength.read())
        self.editor.change_region(index, changed, f"Change {name}")


def _in_a_row(*buttons: QPushButton) -> QHBoxLayout:
    row = QHBoxLayout()
    for button in buttons:
        row.addWidget(button)
    return row


def _gets_of(region: Region) -> object:
    if region.keep:
        return KEEP
    used = [n for n, w in enumerate(region.blend) if w > 0]
    return used[0] if len(used) == 1 else ALL_STYLES
