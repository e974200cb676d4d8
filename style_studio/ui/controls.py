"""The settings panel: a form made from the settings' descriptions (``settings_form``), each control bound both
ways to its field of the window's state; the everyday few first, the rest under *More settings*."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QMenu,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from superqt import QCollapsible

from ..core import (
    IMAGENET,
    LAYER_NAMES,
    PRIMARY_STYLE_LAYERS,
    PRINT_DPI,
    UNTRAINED,
    Settings,
    receptive_field,
    style_patch,
)
from ..core import settings as settings_mod
from ..core.about import About
from .qt_images import pil_to_qimage
from .settings_form import FieldControl, FormBinding, choice_box, control_for, controls_for, grouped, select
from .state import WindowState, shapes_the_plan
from .widgets import LayerSlider, WrappedLabel, wheel_scrolls_the_panel

CHOOSE_FILE = "choose-file"
#: A weights file's name is shown whole up to this many characters (what the narrowest settings column holds).
FILE_NAME_CHARACTERS = 20

#: (menu text, longest side, print dpi or 0 for the photo's own).
SIZE_PRESETS = (
    ("Screen (1920 px)", 1920, 0),
    ("4K screen (3840 px)", 3840, 0),
    ("A4 print at 300 dpi (3508 px)", 3508, 300),
    ("A3 print at 300 dpi (4961 px)", 4961, 300),
)


class ControlsPanel(QWidget):
    """Shows and edits the settings in ``state`` (``style_blend`` belongs to the style list, not here), and the
    print resolution.

    The form is made from the descriptions of the state's settings' fields: each control writes its one setting
    into the state when the user moves it, and shows the state's value when the state changes.

    Attributes:
        fields: each setting's control, by name.

    Signals:
        chooseWeightsFile(): the user picked "Choose file…" for the weights.
        resetRequested(), savePresetRequested(), loadPresetRequested(): its buttons.
        showAllLayersToggled(bool): "All layers" was opened or closed.
        showMoreToggled(bool): "More settings" was opened or closed.
    """

    chooseWeightsFile = Signal()
    resetRequested = Signal()
    savePresetRequested = Signal()
    loadPresetRequested = Signal()
    showAllLayersToggled = Signal(bool)
    showMoreToggled = Signal(bool)

    def __init__(
        self,
        state: WindowState,
        parent: QWidget | None = None,
        *,
        show_all_layers: bool = False,
        show_more: bool = False,
    ) -> None:
        super().__init__(parent)
        self.state = state
        kind = type(state.settings)
        self.fields = controls_for(
            kind, {"layers": self._layers_control, "layer": self._layer_control,
                             "weights": self._weights_control}
        )  # fmt: skip
        self._size_row(self.fields["size"])
        self.schedule = WrappedLabel()
        self.schedule.setToolTip("The scales this run will paint, coarse to fine, and their iterations.")
        self.needs = WrappedLabel()
        self.needs.setToolTip(
            "The memory the run will need, and how long it will take at the speed the last run measured"
        )
        print_dpi = control_for("print_dpi", PRINT_DPI, "int")  # the window's, not a setting of the picture
        self.print_dpi = print_dpi.widget
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.more = QCollapsible("More settings")
        self.more.setCollapsedIcon("▸")
        self.more.setExpandedIcon("▾")
        self.more.setToolTip("Scales, the optimiser, the seed, the device and the other settings")
        for part in (self.more.layout(), self.more.content().layout()):  # its groups as wide as those above
            if part is not None:
                part.setContentsMargins(0, 0, 0, 0)
        for group, everyday, more in grouped(kind, settings_mod.FORM_GROUPS):
            after = {"Picture": [("", self.schedule), ("", self.needs)]}.get(group, [])
            if everyday:
                layout.addWidget(self._group(group, everyday, after))
            extra = [(PRINT_DPI.label, self.print_dpi)] if group == "Picture" else []
            if more or extra:
                self.more.addWidget(self._group(group, more, extra))
        if show_more:
            self.more.expand(animate=False)
        if show_all_layers:
            self.more_layers.expand(animate=False)
        layout.addWidget(self.more)
        self.more_layers.toggled.connect(lambda: self.showAllLayersToggled.emit(self.more_layers.isExpanded()))
        self.more.toggled.connect(lambda: self.showMoreToggled.emit(self.more.isExpanded()))
        layout.addLayout(self._document_buttons())
        layout.addStretch(1)
        wheel_scrolls_the_panel(self)
        self._binding = FormBinding(self.fields, self.state.set)
        self.state.setting_changed.connect(self._show_field)
        self.state.styles_changed.connect(lambda _: self._show_patches())
        self._show_all(self.state.settings)
        dpi = FormBinding({"print_dpi": print_dpi}, lambda _, value: self.state.set_print_dpi(value))
        dpi.show("print_dpi", self.state.print_dpi)
        self.state.print_dpi_changed.connect(lambda value: dpi.show("print_dpi", value))

    def widget(self, name: str) -> QWidget:
        """Setting ``name``'s control."""
        return self.fields[name].widget

    # -- building ----------------------------------------------------------

    def _group(self, title: str, names: list[str], after: Sequence[tuple[str, QWidget]]) -> QGroupBox:
        group = QGroupBox(title)
        form = QFormLayout(group)
        for name in names:
            self.fields[name].add_to(form)
        for label, widget in after:
            form.addRow(label, widget)
        return group

    def _document_buttons(self) -> QHBoxLayout:
        """Reset, Save preset… and Load preset…: the settings as a whole."""
        buttons = QHBoxLayout()
        self.reset_button = QPushButton("Reset")
        self.reset_button.setToolTip("Restore every setting to its default")
        self.save_preset_button = QPushButton("Save preset…")
        self.load_preset_button = QPushButton("Load preset…")
        for b in (self.reset_button, self.save_preset_button, self.load_preset_button):
            buttons.addWidget(b)
        self.reset_button.clicked.connect(self.resetRequested)
        self.save_preset_button.clicked.connect(self.savePresetRequested)
        self.load_preset_button.clicked.connect(self.loadPresetRequested)
        return buttons

    def _layers_control(self, name: str, about: About) -> FieldControl:
        """A slider per layer: the primary ones, and every VGG19 layer under "All layers"."""
        box = QWidget()
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        self.layer_sliders: dict[str, LayerSlider] = {}
        self.more_layers = QCollapsible("All layers")
        self.more_layers.setCollapsedIcon("▸")  # pointing at what opens, not up
        self.more_layers.setExpandedIcon("▾")
        self.more_layers.setToolTip("Show a slider for every VGG19 layer")
        for layer in LAYER_NAMES:
            slider = LayerSlider(layer, 0.0, about)
            self.layer_sliders[layer] = slider
            if layer in PRIMARY_STYLE_LAYERS:
                column.addWidget(slider)
            else:
                self.more_layers.addWidget(slider)
        column.addWidget(self.more_layers)
        changes = tuple(s.valueChanged for s in self.layer_sliders.values())
        return _own(name, about, box, self._style_layers, self._show_style_layers, changes)

    def _layer_control(self, name: str, about: About) -> FieldControl:
        """One layer's choice (the content layer)."""
        box = choice_box(about)
        return _own(name, about, box, lambda: (box.currentData(),),
                    lambda layers: select(box, layers[0]) if layers else None, (box.currentIndexChanged,))  # fmt: skip

    def _weights_control(self, name: str, about: About) -> FieldControl:
        """The weights offered, any file chosen before, "Choose file…", and a button that chooses one."""
        self.weights = choice_box(about)
        self.weights.addItem("Choose file…", CHOOSE_FILE)
        self.weights.activated.connect(self._weights_activated)
        self.weights_browse = QToolButton()
        self.weights_browse.setText("…")
        self.weights_browse.setToolTip("Use a VGG19 weights file (.pth)")
        self.weights_browse.clicked.connect(self.chooseWeightsFile)
        control = _own(name, about, self.weights, self._weights_choice, self.set_weights,
                       (self.weights.currentIndexChanged,))  # fmt: skip
        return dataclasses.replace(control, row=_row(self.weights, self.weights_browse))

    def _size_row(self, size: FieldControl) -> None:
        self.fields["size"] = dataclasses.replace(size, row=_row(size.widget, self._size_presets()))

    def _size_presets(self) -> QToolButton:
        """Sizes people ask for: the photo's own, screens, and paper at 300 dpi."""
        button = QToolButton()
        button.setText("Presets ▾")
        button.setToolTip("Common sizes: the photo's own, screens, prints")
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        button.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0px; }")  # the ▾ says it, not over it
        menu = QMenu(button)
        self.photo_size_action = menu.addAction("Photo's own size")
        self.photo_size_action.setEnabled(False)
        self.photo_size_action.triggered.connect(lambda: self._use_size(self._photo_side or 0, 0))
        menu.addSeparator()
        for text, side, dpi in SIZE_PRESETS:
            action = menu.addAction(text)
            action.triggered.connect(lambda _=False, side=side, dpi=dpi: self._use_size(side, dpi))
        button.setMenu(menu)
        self._photo_side: int | None = None
        return button

    def set_photo_size(self, width: int, height: int) -> None:
        """The content photo's size, for the "Photo's own size" preset."""
        self._photo_side = min(max(width, height), settings_mod.MAX_SIZE)
        self.photo_size_action.setText(f"Photo's own size ({self._photo_side} px)")
        self.photo_size_action.setEnabled(self._photo_side >= settings_mod.MIN_SIZE)

    def _use_size(self, side: int, dpi: int) -> None:
        if side >= settings_mod.MIN_SIZE:
            self.state.set("size", side)
            self.state.set_print_dpi(dpi)

    # -- weights choice ---------------------------------------------------------

    def set_weights_file(self, path: str | Path) -> None:
        """Add a weights file to the choices (once, by its name, its middle left out when long: the choice keeps its
        width; the item's tooltip has the whole path) and select it."""
        path = str(path)
        index = self.weights.findData(path)
        if index < 0:
            index = self.weights.count() - 1  # before "Choose file…"
            name = Path(path).name
            shown = name if len(name) <= FILE_NAME_CHARACTERS else f"{name[:9]}…{name[-(FILE_NAME_CHARACTERS - 10) :]}"
            self.weights.insertItem(index, shown, path)
            self.weights.setItemData(index, path, Qt.ItemDataRole.ToolTipRole)
        self.weights.setCurrentIndex(index)

    def set_weights(self, choice: str) -> None:
        if choice in (IMAGENET, UNTRAINED):
            select(self.weights, choice)
        else:
            self.set_weights_file(choice)

    def _weights_activated(self, index: int) -> None:
        if self.weights.itemData(index) == CHOOSE_FILE:
            current = self.state.settings.weights
            select(self.weights, current if self.weights.findData(current) >= 0 else IMAGENET)
            self.chooseWeightsFile.emit()

    # -- bound to the state ----------------------------------------------------------

    def _show_field(self, name: str, value: object) -> None:
        """The state changed one setting: its control shows it; the schedule follows what shapes the plan."""
        self._binding.show(name, value)
        if name == "scales" and "first_scale" in self.fields:  # automatic scales step up from the first scale
            self.fields["first_scale"].widget.setEnabled(not value)
        if shapes_the_plan(name):
            self._show_schedule()
        if name in ("size", "style_scale"):
            self._show_patches()

    def _show_all(self, settings: Settings) -> None:
        for name in self.fields:
            self._show_field(name, getattr(settings, name))
        self._show_schedule()
        self._show_patches()

    def _show_patches(self) -> None:
        """Each layer's slider shows the patch of the first style its layer sees, at the size the run gives it."""
        styles, side = self.state.styles, self.state.settings.style_side()
        tip = settings_mod.about("style_layers").tooltip
        for layer, slider in self.layer_sliders.items():
            across = f"{layer}: patterns up to about {receptive_field(layer)} px across"
            if not styles:
                slider.show_patch(None, f"{across} of the painting. {tip}")
                continue
            patch = QPixmap.fromImage(pil_to_qimage(style_patch(styles[0].image, layer, side)))
            slider.show_patch(patch, f"{across} of the painting at the {side} px the run sizes it to, as in the "
                                     f"patch beside the name. {tip}")  # fmt: skip

    def _style_layers(self) -> tuple[tuple[str, float], ...]:
        layers = [(name, s.value()) for name, s in self.layer_sliders.items() if s.value() > 0]
        return tuple(sorted(layers, key=lambda kv: LAYER_NAMES.index(kv[0])))

    def _show_style_layers(self, layers: tuple[tuple[str, float], ...]) -> None:
        weights = dict(layers)
        for name, slider in self.layer_sliders.items():
            slider.setValue(weights.get(name, 0.0))
        if any(weights.get(n, 0) > 0 for n in LAYER_NAMES if n not in PRIMARY_STYLE_LAYERS):
            self.more_layers.expand(animate=False)

    def _weights_choice(self) -> str:
        choice = self.weights.currentData()
        return str(choice) if choice != CHOOSE_FILE else self.state.settings.weights

    # -- Settings in and out -------------------------------------------------------

    def settings(self) -> Settings:
        """The settings shown: the state's."""
        return self.state.settings

    def set_settings(self, settings: Settings) -> None:
        """Show a whole settings document (the state takes it; each widget shows its field)."""
        self.state.load(settings)

    def _show_schedule(self) -> None:
        schedule = self.settings().schedule()
        sides = " → ".join(f"{side}" for side, _ in schedule)
        iterations = " + ".join(str(n) for _, n in schedule)
        noun = "iteration" if schedule == [(schedule[0][0], 1)] else "iterations"
        self.schedule.setText(f"{sides} px · {iterations} {noun}")


def _own(name: str, about: About, widget: QWidget, read: Any, show: Any, changes: tuple[Any, ...]) -> FieldControl:
    widget.setToolTip(about.tooltip)
    return FieldControl(name, about, widget, read, show, changes, widget)


def _row(control: QWidget, helper: QWidget) -> QWidget:
    """A form row's control with a helper button beside it (the control takes the width)."""
    row = QWidget()
    line = QHBoxLayout(row)
    line.setContentsMargins(0, 0, 0, 0)
    line.addWidget(control, 1)
    line.addWidget(helper)
    return row
