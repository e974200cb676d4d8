"""The settings panel: one widget per setting, Settings in and out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from superqt import QCollapsible

from ..core import IMAGENET, LAYER_NAMES, PRIMARY_STYLE_LAYERS, UNTRAINED, Settings
from ..core import settings as settings_mod
from .widgets import LayerSlider, LogSlider

CHOOSE_FILE = "choose-file"

#: (menu text, longest side, print dpi or 0 for the photo's own).
SIZE_PRESETS = (
    ("Screen (1920 px)", 1920, 0),
    ("4K screen (3840 px)", 3840, 0),
    ("A4 print at 300 dpi (3508 px)", 3508, 300),
    ("A3 print at 300 dpi (4961 px)", 4961, 300),
)

TIPS = {
    "style_layer": (
        "How strongly this layer's textures are matched. Early layers (relu1_1, relu2_1) carry "
        "colour and fine grain; deep layers (relu4_1, relu5_1) carry larger strokes and shapes. "
        "0 turns the layer off. Changes apply to a running optimisation at once."
    ),
    "content_layer": (
        "The layer whose activations must match the content image. Deeper layers keep the "
        "layout but let details change; shallower ones keep the photo almost as it is."
    ),
    "content_weight": "How much of the content image's layout to keep. Higher: more photo, less painting.",
    "style_weight": "How strongly the picture takes on the style. Higher: more painting, less photo.",
    "tv_weight": "Smoothing. Higher removes speckle and noise but blurs fine strokes.",
    "size": "Longest side of the result in pixels. Larger takes longer and needs more memory.",
    "iterations": "Optimisation steps at the first scale. More steps: a more finished picture.",
    "scales": (
        "Coarse-to-fine: paint at half the size first (halved again for each further scale), then "
        "refine at full size. 2-3 scales give larger, more coherent strokes. Auto: one scale up to "
        f"{settings_mod.SCREEN_SIDE} px; a large picture settles at screen size, then each doubling "
        "refines it. 1 = full size only."
    ),
    "finer_iterations": (
        "Iterations at each finer scale, as a share of the previous scale's. The composition settles at "
        "the coarse scales; the finer ones only refine it, and each costs four times as much per iteration."
    ),
    "print_dpi": (
        "The print resolution recorded in exported pictures: how many pixels make an inch on paper. "
        "Photo's own: the photo's, or 72 when it has none."
    ),
    "tile": (
        "Work on a large picture in tiles of this size: the same result, in less memory, a little slower. "
        "Auto: only when the picture would not fit in memory otherwise."
    ),
    "optimizer": "L-BFGS converges fastest for style transfer; Adam is steadier with unusual settings.",
    "init": (
        "Where the picture starts: the content photo (keeps layout best), random noise (more "
        "painterly, less faithful) or the first style image."
    ),
    "seed": "The random seed: the same seed and settings give the same picture on the same device.",
    "preserve_colors": "Keep the photo's own colours and take only the style's brushwork and texture.",
    "style_scale": (
        "Size of the style image relative to the result. Smaller: finer, more repeated strokes; larger: bigger strokes."
    ),
    "pooling": "Max is VGG's own pooling; average pooling gives smoother, softer textures.",
    "device": "Where to compute: automatic picks a CUDA or Apple GPU when there is one, else the CPU.",
    "precision": (
        "Automatic uses fast mixed precision (bf16/fp16) where the device does it well and "
        "32-bit floats elsewhere. The picture looks the same."
    ),
    "deterministic": (
        "The same seed and settings give the same picture, on a GPU too. Off, a GPU may pick faster "
        "kernels whose results differ slightly from run to run."
    ),
    "weights": (
        "The trained network that judges content and style. ImageNet VGG19 gives real results; "
        "untrained features only transfer colour and texture."
    ),
}


def _combo(items: list[tuple[str, str]], tip: str) -> QComboBox:
    box = QComboBox()
    for text, data in items:
        box.addItem(text, data)
    box.setToolTip(tip)
    return box


def _select(box: QComboBox, data: str) -> None:
    index = box.findData(data)
    if index >= 0:
        box.setCurrentIndex(index)


class ControlsPanel(QWidget):
    """Edits a Settings value. ``style_blend`` belongs to the style list, not here.

    Signals:
        changed(): any setting changed.
        liveChanged(str): a loss weight changed (a running optimisation takes it): the setting's name.
        chooseWeightsFile(): the user picked "Choose file…" for the weights.
        resetRequested(), savePresetRequested(), loadPresetRequested(): its buttons.
        showAllLayersToggled(bool): "All layers" was opened or closed.
    """

    changed = Signal()
    liveChanged = Signal(str)
    chooseWeightsFile = Signal()
    resetRequested = Signal()
    savePresetRequested = Signal()
    loadPresetRequested = Signal()
    showAllLayersToggled = Signal(bool)

    def __init__(self, settings: Settings, parent: QWidget | None = None, *, show_all_layers: bool = False) -> None:
        super().__init__(parent)
        self._base = settings
        self._content_layers = settings.content_layers
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
        self.set_settings(settings)

    # -- building ----------------------------------------------------------

    def _layers_group(self, show_all: bool) -> QGroupBox:
        group = QGroupBox("Style layers")
        box = QVBoxLayout(group)
        self.layer_sliders: dict[str, LayerSlider] = {}
        for name in PRIMARY_STYLE_LAYERS:
            box.addWidget(self._layer_slider(name))
        self.more_layers = QCollapsible("All layers")
        self.more_layers.setToolTip("Show a slider for every VGG19 layer")
        for name in LAYER_NAMES:
            if name not in PRIMARY_STYLE_LAYERS:
                self.more_layers.addWidget(self._layer_slider(name))
        if show_all:
            self.more_layers.expand(animate=False)
        box.addWidget(self.more_layers)
        form = QFormLayout()
        self.content_layer = _combo([(n, n) for n in LAYER_NAMES], TIPS["content_layer"])
        self.content_layer.currentIndexChanged.connect(self._content_layer_changed)
        form.addRow("Content layer", self.content_layer)
        box.addLayout(form)
        return group

    def _layer_slider(self, name: str) -> LayerSlider:
        slider = LayerSlider(name, 0.0)
        slider.setToolTip(TIPS["style_layer"])
        slider.valueChanged.connect(lambda *_: self._live("style_layers"))
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
            widget.setToolTip(TIPS[key])
            widget.valueChanged.connect(lambda *_, key=key: self._live(key))
            form.addRow(label, widget)
        return group

    def _output_group(self) -> QGroupBox:
        group = QGroupBox("Picture")
        form = QFormLayout(group)
        self.output_size = QSpinBox()
        self.output_size.setRange(settings_mod.MIN_SIZE, settings_mod.MAX_SIZE)
        self.output_size.setSingleStep(64)
        self.output_size.setSuffix(" px")
        self.iterations = QSpinBox()
        self.iterations.setRange(1, 100_000)
        self.iterations.setSingleStep(50)
        self.scales = QSpinBox()
        self.scales.setRange(0, settings_mod.MAX_SCALES)
        self.scales.setSpecialValueText("Auto")
        self.finer_iterations = QSpinBox()
        self.finer_iterations.setRange(5, 100)
        self.finer_iterations.setSingleStep(5)
        self.finer_iterations.setSuffix(" %")
        self.tile = QSpinBox()
        self.tile.setRange(0, settings_mod.MAX_SIZE)
        self.tile.setSingleStep(256)
        self.tile.setSpecialValueText("Auto")
        self.tile.setSuffix(" px")
        self.schedule = QLabel()
        self.schedule.setWordWrap(True)
        self.schedule.setToolTip("The scales this run will paint, coarse to fine, and their iterations.")
        self.needs = QLabel()
        self.needs.setWordWrap(True)
        self.needs.setToolTip(
            "The memory the run will need, and how long it will take at the speed the last run measured"
        )
        self.optimizer = _combo([("L-BFGS", "lbfgs"), ("Adam", "adam")], TIPS["optimizer"])
        self.init = _combo(
            [("Content image", "content"), ("Noise", "noise"), ("First style image", "style")], TIPS["init"]
        )
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.preserve_colors = QCheckBox("Preserve content colours")
        self.style_scale = QDoubleSpinBox()
        self.style_scale.setRange(0.1, 4.0)
        self.style_scale.setSingleStep(0.1)
        self.style_scale.setDecimals(2)
        self.pooling = _combo([("Max", "max"), ("Average", "avg")], TIPS["pooling"])
        self.print_dpi = QSpinBox()
        self.print_dpi.setRange(0, 2400)
        self.print_dpi.setSingleStep(50)
        self.print_dpi.setSpecialValueText("Photo's own")
        self.print_dpi.setSuffix(" dpi")
        size_row = QWidget()
        size_layout = QHBoxLayout(size_row)
        size_layout.setContentsMargins(0, 0, 0, 0)
        size_layout.addWidget(self.output_size, 1)
        size_layout.addWidget(self._size_presets())
        self.output_size.setToolTip(TIPS["size"])
        form.addRow("Size", size_row)
        for key, widget, label in (
            ("iterations", self.iterations, "Iterations"),
            ("scales", self.scales, "Scales"),
            ("finer_iterations", self.finer_iterations, "Finer scales"),
            ("optimizer", self.optimizer, "Optimiser"),
            ("init", self.init, "Start from"),
            ("seed", self.seed, "Seed"),
            ("style_scale", self.style_scale, "Style scale"),
            ("pooling", self.pooling, "Pooling"),
            ("tile", self.tile, "Tiles"),
            ("print_dpi", self.print_dpi, "Print resolution"),
        ):
            widget.setToolTip(TIPS[key])
            form.addRow(label, widget)
        form.insertRow(4, "", self.schedule)
        form.insertRow(5, "", self.needs)
        self.preserve_colors.setToolTip(TIPS["preserve_colors"])
        form.addRow(self.preserve_colors)
        for spin in (self.output_size, self.iterations, self.scales, self.finer_iterations, self.tile, self.seed):
            spin.valueChanged.connect(self._changed)
        self.changed.connect(self._show_schedule)
        self.style_scale.valueChanged.connect(self._changed)
        for box in (self.optimizer, self.init, self.pooling):
            box.currentIndexChanged.connect(self._changed)
        self.preserve_colors.toggled.connect(self._changed)
        return group

    def _size_presets(self) -> QToolButton:
        """Sizes people ask for: the photo's own, screens, and paper at 300 dpi."""
        button = QToolButton()
        button.setText("Presets")
        button.setToolTip("Common sizes: the photo's own, screens, prints")
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
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
            [("Automatic", "auto"), ("CPU", "cpu"), ("CUDA GPU", "cuda"), ("Apple GPU (MPS)", "mps")], TIPS["device"]
        )
        self.device.setEditable(False)
        self.precision = _combo(
            [("Automatic", "auto"), ("32-bit (fp32)", "fp32"), ("bfloat16", "bf16"), ("float16", "fp16")],
            TIPS["precision"],
        )
        weights_row = QHBoxLayout()
        self.weights = _combo(
            [
                ("ImageNet VGG19", IMAGENET),
                ("Untrained (colour and texture only)", UNTRAINED),
                ("Choose file…", CHOOSE_FILE),
            ],
            TIPS["weights"],
        )
        self.weights.setMinimumContentsLength(18)
        self.weights.activated.connect(self._weights_activated)
        self.weights.currentIndexChanged.connect(self._changed)
        weights_row.addWidget(self.weights, 1)
        self.weights_browse = QToolButton()
        self.weights_browse.setText("…")
        self.weights_browse.setToolTip("Use a VGG19 weights file (.pth)")
        self.weights_browse.clicked.connect(self.chooseWeightsFile)
        weights_row.addWidget(self.weights_browse)
        self.deterministic = QCheckBox("Same seed, same picture")
        self.deterministic.setToolTip(TIPS["deterministic"])
        form.addRow("Device", self.device)
        form.addRow("Precision", self.precision)
        form.addRow(self.deterministic)
        form.addRow("Weights", weights_row)
        self.device.currentIndexChanged.connect(self._changed)
        self.precision.currentIndexChanged.connect(self._changed)
        self.deterministic.toggled.connect(self._changed)
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
            _select(self.weights, self._base.weights if self.weights.findData(self._base.weights) >= 0 else IMAGENET)
            self.chooseWeightsFile.emit()

    # -- Settings in and out -------------------------------------------------------

    def settings(self) -> Settings:
        layers = tuple((name, s.value()) for name, s in self.layer_sliders.items() if s.value() > 0)
        ordered = tuple(sorted(layers, key=lambda kv: LAYER_NAMES.index(kv[0])))
        weights = self.weights.currentData()
        return dataclasses.replace(
            self._base,
            content_layers=self._content_layers,
            style_layers=ordered,
            content_weight=self.content_weight.value(),
            style_weight=self.style_weight.value(),
            tv_weight=self.tv_weight.value(),
            size=self.output_size.value(),
            iterations=self.iterations.value(),
            scales=self.scales.value(),
            finer_iterations=self.finer_iterations.value() / 100,
            tile=max(self.tile.value(), settings_mod.MIN_TILE) if self.tile.value() else 0,
            optimizer=self.optimizer.currentData(),
            init=self.init.currentData(),
            seed=self.seed.value(),
            preserve_colors=self.preserve_colors.isChecked(),
            style_scale=round(self.style_scale.value(), 2),
            pooling=self.pooling.currentData(),
            device=self.device.currentData(),
            precision=self.precision.currentData(),
            deterministic=self.deterministic.isChecked(),
            weights=weights if weights != CHOOSE_FILE else self._base.weights,
        )

    def set_settings(self, settings: Settings) -> None:
        self._loading = True
        try:
            self._base = settings
            self._content_layers = settings.content_layers
            weights = settings.style_layer_weights
            for name, slider in self.layer_sliders.items():
                slider.setValue(weights.get(name, 0.0))
            if any(weights.get(n, 0) > 0 for n in LAYER_NAMES if n not in PRIMARY_STYLE_LAYERS):
                self.more_layers.expand(animate=False)
            if settings.content_layers:
                _select(self.content_layer, settings.content_layers[0])
            self.content_weight.setValue(settings.content_weight)
            self.style_weight.setValue(settings.style_weight)
            self.tv_weight.setValue(settings.tv_weight)
            self.output_size.setValue(settings.size)
            self.iterations.setValue(settings.iterations)
            self.scales.setValue(settings.scales)
            self.finer_iterations.setValue(round(settings.finer_iterations * 100))
            self.tile.setValue(settings.tile)
            _select(self.optimizer, settings.optimizer)
            _select(self.init, settings.init)
            self.seed.setValue(min(settings.seed, 2**31 - 1))
            self.preserve_colors.setChecked(settings.preserve_colors)
            self.style_scale.setValue(settings.style_scale)
            _select(self.pooling, settings.pooling)
            if self.device.findData(settings.device) < 0:
                self.device.addItem(settings.device, settings.device)
            _select(self.device, settings.device)
            _select(self.precision, settings.precision)
            self.deterministic.setChecked(settings.deterministic)
            self.set_weights(settings.weights)
        finally:
            self._loading = False
        self.changed.emit()

    def _show_schedule(self) -> None:
        schedule = self.settings().schedule()
        sides = " → ".join(f"{side}" for side, _ in schedule)
        iterations = " + ".join(str(n) for _, n in schedule)
        noun = "iteration" if schedule == [(schedule[0][0], 1)] else "iterations"
        self.schedule.setText(f"{sides} px · {iterations} {noun}")

    def _content_layer_changed(self, _: int) -> None:
        if not self._loading:
            self._content_layers = (self.content_layer.currentData(),)
            self._changed()

    def _changed(self, *_: object) -> None:
        if not self._loading:
            self.changed.emit()

    def _live(self, name: str) -> None:
        if not self._loading:
            self.liveChanged.emit(name)
            self.changed.emit()

    def live_value(self, name: str) -> object:
        """The value of a live setting (``settings.LIVE_FIELDS`` but the blend) as the controls show it."""
        if name == "style_layers":
            layers = [(layer, s.value()) for layer, s in self.layer_sliders.items() if s.value() > 0]
            return tuple(sorted(layers, key=lambda kv: LAYER_NAMES.index(kv[0])))
        sliders = {
            "content_weight": self.content_weight,
            "style_weight": self.style_weight,
            "tv_weight": self.tv_weight,
        }
        return sliders[name].value()
