"""The settings panel: one widget per setting, each bound both ways to its field of the window's state."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QMenu,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from superqt import QCollapsible

from ..core import IMAGENET, LAYER_NAMES, MAX_DPI, PRIMARY_STYLE_LAYERS, UNTRAINED, Settings
from ..core import settings as settings_mod
from .state import WindowState
from .widgets import LayerSlider, LogSlider, WrappedLabel, bounded

CHOOSE_FILE = "choose-file"

#: (menu text, longest side, print dpi or 0 for the photo's own).
SIZE_PRESETS = (
    ("Screen (1920 px)", 1920, 0),
    ("4K screen (3840 px)", 3840, 0),
    ("A4 print at 300 dpi (3508 px)", 3508, 300),
    ("A3 print at 300 dpi (4961 px)", 4961, 300),
)

#: Tooltips of the fields that are not settings (each setting's is its ``About.tooltip``).
PRINT_DPI_TIP = (
    "The print resolution recorded in exported pictures: how many pixels make an inch on paper. "
    "Photo's own: the photo's, or 72 when it has none."
)


def tip(name: str) -> str:
    """The window's tooltip for setting ``name``: its description's, the one the command line's help comes from."""
    return settings_mod.about(name).tooltip


#: A choice's box is this many characters wide at least, whatever its longest choice (the list shows them whole):
#: the settings column stays narrow, and the picture wide.
COMBO_CHARACTERS = 14


def _combo(items: list[tuple[str, str]], tip: str) -> QComboBox:
    box = QComboBox()
    for text, data in items:
        box.addItem(text, data)
    box.setToolTip(tip)
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    box.setMinimumContentsLength(COMBO_CHARACTERS)
    return box


def _select(box: QComboBox, data: str) -> None:
    index = box.findData(data)
    if index >= 0:
        box.setCurrentIndex(index)


class ControlsPanel(QWidget):
    """Shows and edits the settings in ``state`` (``style_blend`` belongs to the style list, not here).

    Each widget writes its one setting into the state when the user moves it,
    and shows the state's value when the state changes (``_bindings``).

    Signals:
        chooseWeightsFile(): the user picked "Choose file…" for the weights.
        resetRequested(), savePresetRequested(), loadPresetRequested(): its buttons.
        showAllLayersToggled(bool): "All layers" was opened or closed.
    """

    chooseWeightsFile = Signal()
    resetRequested = Signal()
    savePresetRequested = Signal()
    loadPresetRequested = Signal()
    showAllLayersToggled = Signal(bool)

    def __init__(
        self,
        settings: Settings,
        parent: QWidget | None = None,
        *,
        show_all_layers: bool = False,
        state: WindowState | None = None,
    ) -> None:
        super().__init__(parent)
        self.state = state if state is not None else WindowState(settings)
        self._loading = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self._layers_group(show_all_layers))
        layout.addWidget(self._weights_group())
        layout.addWidget(self._output_group())
        layout.addWidget(self._compute_group())
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
        self.more_layers.toggled.connect(lambda: self.showAllLayersToggled.emit(self.more_layers.isExpanded()))
        layout.addLayout(buttons)
        layout.addStretch(1)
        self._bindings = self._bind()
        self.state.setting_changed.connect(self._show_field)
        self.state.load(settings)
        self._show_all(self.state.settings)
        self.print_dpi.setValue(self.state.print_dpi)
        self.print_dpi.valueChanged.connect(self.state.set_print_dpi)
        self.state.print_dpi_changed.connect(lambda dpi: self.print_dpi.setValue(dpi))

    # -- building ----------------------------------------------------------

    def _layers_group(self, show_all: bool) -> QGroupBox:
        group = QGroupBox("Style layers")
        box = QVBoxLayout(group)
        self.layer_sliders: dict[str, LayerSlider] = {}
        for name in PRIMARY_STYLE_LAYERS:
            box.addWidget(self._layer_slider(name))
        self.more_layers = QCollapsible("All layers")
        self.more_layers.setCollapsedIcon("▸")  # pointing at what opens, not up
        self.more_layers.setExpandedIcon("▾")
        self.more_layers.setToolTip("Show a slider for every VGG19 layer")
        for name in LAYER_NAMES:
            if name not in PRIMARY_STYLE_LAYERS:
                self.more_layers.addWidget(self._layer_slider(name))
        if show_all:
            self.more_layers.expand(animate=False)
        box.addWidget(self.more_layers)
        form = QFormLayout()
        self.content_layer = _combo([(n, n) for n in LAYER_NAMES], tip("content_layers"))
        form.addRow("Content layer", self.content_layer)
        box.addLayout(form)
        return group

    def _layer_slider(self, name: str) -> LayerSlider:
        slider = LayerSlider(name, 0.0)
        slider.setToolTip(tip("style_layers"))
        self.layer_sliders[name] = slider
        return slider

    def _weights_group(self) -> QGroupBox:
        group = QGroupBox("Balance")
        form = QFormLayout(group)
        self.content_weight = LogSlider(0.01, 100, 1.0)
        self.style_weight = LogSlider(0.01, 1000, 1.0)
        self.tv_weight = LogSlider(0.001, 10, 0.1)
        for key, widget, label in (
            ("content_weight", self.content_weight, "Content"),
            ("style_weight", self.style_weight, "Style"),
            ("tv_weight", self.tv_weight, "Smoothing"),
        ):
            widget.setToolTip(tip(key))
            form.addRow(label, widget)
        return group

    def _output_group(self) -> QGroupBox:
        group = QGroupBox("Picture")
        form = QFormLayout(group)
        self.output_size = QSpinBox()
        self.output_size.setSingleStep(64)
        self.output_size.setSuffix(" px")
        self.iterations = QSpinBox()
        self.iterations.setSingleStep(50)
        self.scales = QSpinBox()
        self.first_scale = QSpinBox()
        self.first_scale.setSingleStep(32)
        self.first_scale.setSuffix(" px")
        self.scale_ratio = QDoubleSpinBox()
        self.scale_ratio.setSingleStep(0.1)
        self.scale_ratio.setDecimals(2)
        self.finer_iterations = QSpinBox()
        self.finer_iterations.setSingleStep(5)
        self.finer_iterations.setSuffix(" %")
        self.tile = QSpinBox()
        self.tile.setSingleStep(256)
        self.tile.setSuffix(" px")
        self.schedule = WrappedLabel()
        self.schedule.setToolTip("The scales this run will paint, coarse to fine, and their iterations.")
        self.needs = WrappedLabel()
        self.needs.setToolTip(
            "The memory the run will need, and how long it will take at the speed the last run measured"
        )
        self.optimizer = _combo([("L-BFGS", "lbfgs"), ("Adam", "adam")], tip("optimizer"))
        self.init = _combo(
            [
                ("Content image", "content"),
                ("Noise", "noise"),
                ("First style image", "style"),
                ("Content, recoloured", "palette"),
                ("Instant look", "instant"),
            ],
            tip("init"),
        )
        self.seed = QSpinBox()
        self.preserve_colors = QCheckBox("Preserve content colours")
        self.average = QCheckBox("Average the last iterations")
        self.style_scale = QDoubleSpinBox()
        self.style_scale.setSingleStep(0.1)
        self.style_scale.setDecimals(2)
        self.pooling = _combo([("Max", "max"), ("Average", "avg")], tip("pooling"))
        self.style_loss = _combo([(kind.label, name) for name, kind in settings_mod.STYLE_LOSS_KINDS.items()],
                                 tip("style_loss"))  # fmt: skip
        self.print_dpi = QSpinBox()
        self.print_dpi.setRange(0, MAX_DPI)  # the job's own bound: what the window sets, a batch accepts
        self.print_dpi.setSingleStep(50)
        self.print_dpi.setSpecialValueText("Photo's own")
        self.print_dpi.setSuffix(" dpi")
        self.print_dpi.setToolTip(PRINT_DPI_TIP)
        #: The spin boxes of bounded settings, by setting: their ranges and tooltips are their descriptions'.
        self.bounded: dict[str, QSpinBox | QDoubleSpinBox] = {
            "size": self.output_size, "iterations": self.iterations, "scales": self.scales,
            "finer_iterations": self.finer_iterations, "tile": self.tile, "seed": self.seed,
            "style_scale": self.style_scale, "scale_ratio": self.scale_ratio, "first_scale": self.first_scale,
        }  # fmt: skip
        for name, spin in self.bounded.items():
            bounded(spin, settings_mod.about(name), scale=100.0 if name == "finer_iterations" else 1.0)
        size_row = QWidget()
        size_layout = QHBoxLayout(size_row)
        size_layout.setContentsMargins(0, 0, 0, 0)
        size_layout.addWidget(self.output_size, 1)
        size_layout.addWidget(self._size_presets())
        form.addRow("Size", size_row)
        for widget, label in (
            (self.iterations, "Iterations"),
            (self.scales, "Scales"),
            (self.first_scale, "First scale"),
            (self.scale_ratio, "Scale step"),
            (self.finer_iterations, "Finer scales"),
            (self.optimizer, "Optimiser"),
            (self.init, "Start from"),
            (self.seed, "Seed"),
            (self.style_scale, "Style scale"),
            (self.pooling, "Pooling"),
            (self.style_loss, "Style measure"),
            (self.tile, "Tiles"),
            (self.print_dpi, "Print resolution"),
        ):
            form.addRow(label, widget)
        form.insertRow(6, "", self.schedule)
        form.insertRow(7, "", self.needs)
        for name, check in (("preserve_colors", self.preserve_colors), ("average", self.average)):
            check.setToolTip(tip(name))
            form.addRow(check)
        return group

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
            self.output_size.setValue(side)
            self.print_dpi.setValue(dpi)

    def _compute_group(self) -> QGroupBox:
        group = QGroupBox("Computation")
        form = QFormLayout(group)
        self.device = _combo(
            [("Automatic", "auto"), ("CPU", "cpu"), ("CUDA GPU", "cuda"), ("Apple GPU (MPS)", "mps")], tip("device")
        )
        self.device.setEditable(False)
        self.precision = _combo(
            [("Automatic", "auto"), ("32-bit (fp32)", "fp32"), ("bfloat16", "bf16"), ("float16", "fp16")],
            tip("precision"),
        )
        weights_row = QHBoxLayout()
        self.weights = _combo(
            [
                ("ImageNet VGG19", IMAGENET),
                ("Untrained (colour and texture only)", UNTRAINED),
                ("Choose file…", CHOOSE_FILE),
            ],
            tip("weights"),
        )
        self.weights.activated.connect(self._weights_activated)
        weights_row.addWidget(self.weights, 1)
        self.weights_browse = QToolButton()
        self.weights_browse.setText("…")
        self.weights_browse.setToolTip("Use a VGG19 weights file (.pth)")
        self.weights_browse.clicked.connect(self.chooseWeightsFile)
        weights_row.addWidget(self.weights_browse)
        self.deterministic = QCheckBox("Same seed, same picture")
        self.deterministic.setToolTip(tip("deterministic"))
        form.addRow("Device", self.device)
        form.addRow("Precision", self.precision)
        form.addRow(self.deterministic)
        form.addRow("Weights", weights_row)
        return group

    # -- weights choice ---------------------------------------------------------

    def set_weights_file(self, path: str | Path) -> None:
        """Add a weights file to the choices (once) and select it."""
        path = str(path)
        index = self.weights.findData(path)
        if index < 0:
            index = self.weights.count() - 1  # before "Choose file…"
            self.weights.insertItem(index, f"File: {Path(path).name}", path)
            self.weights.setItemData(index, path, Qt.ItemDataRole.ToolTipRole)
        self.weights.setCurrentIndex(index)

    def set_weights(self, choice: str) -> None:
        if choice in (IMAGENET, UNTRAINED):
            _select(self.weights, choice)
        else:
            self.set_weights_file(choice)

    def _weights_activated(self, index: int) -> None:
        if self.weights.itemData(index) == CHOOSE_FILE:
            current = self.state.settings.weights
            _select(self.weights, current if self.weights.findData(current) >= 0 else IMAGENET)
            self.chooseWeightsFile.emit()

    # -- bound to the state ----------------------------------------------------------

    def _bind(self) -> dict[str, tuple[Callable[[], Any], Callable[[Any], None]]]:
        """Each setting's (read the widget, show a value in it), with the widget's change signals bound to it."""
        spins = {"size": self.output_size, "iterations": self.iterations, "scales": self.scales,
                 "first_scale": self.first_scale}  # fmt: skip
        combos = {"optimizer": self.optimizer, "init": self.init, "pooling": self.pooling,
                  "style_loss": self.style_loss, "device": self.device, "precision": self.precision}  # fmt: skip
        checks = {"preserve_colors": self.preserve_colors, "average": self.average,
                  "deterministic": self.deterministic}  # fmt: skip
        sliders = {"content_weight": self.content_weight, "style_weight": self.style_weight,
                   "tv_weight": self.tv_weight}  # fmt: skip
        # Each setting: (read the widget, show a value in it, the widget's change signals).
        table: dict[str, tuple[Callable[[], Any], Callable[[Any], None], list[Any]]] = {
            "style_layers": (self._style_layers, self._show_style_layers,
                             [s.valueChanged for s in self.layer_sliders.values()]),
            "content_layers": (lambda: (self.content_layer.currentData(),), self._show_content_layers,
                               [self.content_layer.currentIndexChanged]),
            "finer_iterations": (lambda: self.finer_iterations.value() / 100,
                                 lambda v: self.finer_iterations.setValue(round(v * 100)),
                                 [self.finer_iterations.valueChanged]),
            "tile": (lambda: max(self.tile.value(), settings_mod.MIN_TILE) if self.tile.value() else 0,
                     self.tile.setValue, [self.tile.valueChanged]),
            "seed": (self.seed.value, lambda v: self.seed.setValue(min(v, 2**31 - 1)), [self.seed.valueChanged]),
            **{name: (_rounded(spin), spin.setValue, [spin.valueChanged])
               for name, spin in (("style_scale", self.style_scale), ("scale_ratio", self.scale_ratio))},
            "weights": (self._weights_choice, self.set_weights, [self.weights.currentIndexChanged]),
            **{name: (spin.value, spin.setValue, [spin.valueChanged]) for name, spin in spins.items()},
            **{name: (box.currentData, functools.partial(self._select_choice, box), [box.currentIndexChanged])
               for name, box in combos.items()},
            **{name: (check.isChecked, check.setChecked, [check.toggled]) for name, check in checks.items()},
            **{name: (slider.value, slider.setValue, [slider.valueChanged]) for name, slider in sliders.items()},
        }  # fmt: skip
        for name, (_, _, changes) in table.items():
            for signal in changes:
                signal.connect(lambda *_, name=name: self._write(name))
        return {name: (read, show) for name, (read, show, _) in table.items()}

    def _write(self, name: str) -> None:
        """The user moved a widget: its one setting goes into the state."""
        if not self._loading:
            self.state.set(name, self._bindings[name][0]())

    def _show_field(self, name: str, value: object) -> None:
        """The state changed one setting: show it (unless the widget already says so: no echo while typing)."""
        binding = self._bindings.get(name)
        if binding is not None and binding[0]() != value:
            self._loading = True
            try:
                binding[1](value)
            finally:
                self._loading = False
        if name == "scales":  # a number of scales makes the schedule; automatic: it steps up from the first scale
            self.first_scale.setEnabled(not value)
        if name in ("size", "iterations", "scales", "first_scale", "scale_ratio", "finer_iterations"):
            self._show_schedule()

    def _show_all(self, settings: Settings) -> None:
        for name in self._bindings:
            self._show_field(name, getattr(settings, name))
        self._show_schedule()

    def _style_layers(self) -> tuple[tuple[str, float], ...]:
        layers = [(name, s.value()) for name, s in self.layer_sliders.items() if s.value() > 0]
        return tuple(sorted(layers, key=lambda kv: LAYER_NAMES.index(kv[0])))

    def _show_style_layers(self, layers: tuple[tuple[str, float], ...]) -> None:
        weights = dict(layers)
        for name, slider in self.layer_sliders.items():
            slider.setValue(weights.get(name, 0.0))
        if any(weights.get(n, 0) > 0 for n in LAYER_NAMES if n not in PRIMARY_STYLE_LAYERS):
            self.more_layers.expand(animate=False)

    def _show_content_layers(self, layers: tuple[str, ...]) -> None:
        if layers:
            _select(self.content_layer, layers[0])

    def _weights_choice(self) -> str:
        choice = self.weights.currentData()
        return str(choice) if choice != CHOOSE_FILE else self.state.settings.weights

    def _select_choice(self, box: QComboBox, value: str) -> None:
        if box is self.device and box.findData(value) < 0:
            box.addItem(value, value)
        _select(box, value)

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


def _rounded(spin: QDoubleSpinBox) -> Callable[[], float]:
    """Read a spin box's value as it shows it (two decimals)."""
    return lambda: round(spin.value(), 2)
