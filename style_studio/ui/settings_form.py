"""A settings form made from the settings' descriptions: each field's ``About`` says its control (a check box, a
choice, a number, a weight's slider), its label, range and step, its group, and whether it shows at first.

A new setting with a label in its ``About`` gets its control here with nothing else written; a control of its
own kind (``About.control``: the style layers' sliders, the weights' file choice) is made by the form's owner and
placed like any other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QRegularExpression, Signal, SignalInstance
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from ..core.about import About, described
from .widgets import SPIN_MAX, LogSlider, bounded, slider_position, slider_value, stepped_slider

#: A choice's box is this many characters wide at least, whatever its longest choice (the list shows them whole):
#: the settings column stays narrow, and the picture wide.
COMBO_CHARACTERS = 14


@dataclass(frozen=True)
class FieldControl:
    """One setting's control: the widget, how to read its value and show one, and the signals of a user's change.

    Attributes:
        row: what the form places (the widget, or a row holding it and its helpers).
    """

    name: str
    about: About
    widget: QWidget
    read: Callable[[], Any]
    show: Callable[[Any], None]
    changes: tuple[SignalInstance, ...]
    row: QWidget

    def add_to(self, form: QFormLayout) -> None:
        """Add this control's row to ``form``: a check box says its own label, and a control named as its group
        (the style layers' sliders) has the group's title for one."""
        if isinstance(self.widget, QCheckBox) or self.about.label == self.about.group:
            form.addRow(self.row)
        else:
            form.addRow(self.about.label, self.row)


def in_form(kind: type) -> dict[str, tuple[About, str]]:
    """The fields of ``kind`` (``Settings``, ``VideoOptions``) the form has a control for (a label), with their
    descriptions and type annotations, in the fields' order."""
    about = described(kind)
    return {f.name: (about[f.name], str(f.type)) for f in dataclasses.fields(kind) if about[f.name].label}


def grouped(kind: type, groups: Iterable[str]) -> list[tuple[str, list[str], list[str]]]:
    """Each group's (name, the fields shown at first, the fields under *More*), in ``groups``' order.

    Raises:
        ValueError: a field names a group not in ``groups`` (it would be missing from the window).
    """
    groups = tuple(groups)
    fields = in_form(kind)
    strays = sorted(name for name, (about, _) in fields.items() if about.group not in groups)
    if strays:
        raise ValueError(f"settings without a known form group: {', '.join(strays)}")
    return [
        (
            group,
            [n for n, (about, _) in fields.items() if about.group == group and about.everyday],
            [n for n, (about, _) in fields.items() if about.group == group and not about.everyday],
        )
        for group in groups
    ]


def control_for(name: str, about: About, annotation: str) -> FieldControl:
    """The control a setting's description and type call for.

    Raises:
        ValueError: the description asks for a control of its own kind (``About.control``), which its owner makes.
    """
    if about.control:
        raise ValueError(f"{name} has a control of its own ({about.control}); the form's owner makes it")
    widget: QWidget
    read: Callable[[], Any]
    show: Callable[[Any], None]
    changes: tuple[SignalInstance, ...]
    if annotation == "bool":
        check = QCheckBox(about.label)
        widget, read, show, changes = check, check.isChecked, check.setChecked, (check.toggled,)
    elif about.choices or about.offers:
        box = choice_box(about)
        widget, read, show, changes = box, box.currentData, lambda v: select(box, v), (box.currentIndexChanged,)
    elif about.slider is not None:
        slider = LogSlider(*about.slider, 1.0, limit=about.high)
        widget, read, show, changes = slider, slider.value, slider.setValue, (slider.valueChanged,)
    elif annotation == "int" and about.high is not None and about.high > SPIN_MAX:
        edit = WholeNumberEdit(int(about.high))
        widget, read, show, changes = edit, edit.value, edit.setValue, (edit.valueChanged,)
    elif annotation == "int" or about.percent:
        spin = _whole_spin(about)
        widget, changes = spin, (spin.valueChanged,)
        read, show = _whole_value(spin, about), _show_whole(spin, about)
    elif annotation == "float":
        real = QDoubleSpinBox()
        real.setDecimals(about.decimals)
        real.setSingleStep(about.step)
        bounded(real, about)
        widget, changes = real, (real.valueChanged,)
        read, show = (lambda: round(real.value(), about.decimals)), real.setValue
    else:
        raise ValueError(f"{name}: no control for a field of type {annotation}; give its About a control kind")
    widget.setToolTip(about.tooltip)
    return FieldControl(name, about, widget, read, show, changes, widget)


def slider_for(name: str, about: About, annotation: str) -> FieldControl:
    """A plain slider over the range ``about`` describes, in its steps (a brush's size, a region's edge), where a
    number beside it would say more than the user needs."""
    slider = stepped_slider(about)
    whole = annotation == "int"

    def read() -> float:
        value = slider_value(slider.value(), about)
        return int(value) if whole else value

    def show(value: float) -> None:
        slider.setValue(slider_position(value, about))

    return FieldControl(name, about, slider, read, show, (slider.valueChanged,), slider)


def controls_for(kind: type, own: Mapping[str, Callable[[str, About], FieldControl]]) -> dict[str, FieldControl]:
    """Every control of ``kind``'s form; ``own`` makes the controls of their own kinds, by ``About.control``."""
    made = {}
    for name, (about, annotation) in in_form(kind).items():
        made[name] = own[about.control](name, about) if about.control else control_for(name, about, annotation)
    return made


class FormBinding:
    """Controls bound both ways to a store of values: a user's change is written (``write(name, value)``); a value
    shown (``show``) is put in its control without being written back."""

    def __init__(self, controls: Mapping[str, FieldControl], write: Callable[[str, Any], None]) -> None:
        self.controls = controls
        self._write = write
        self._showing = False
        self._writing: str | None = None
        for name, control in controls.items():
            for signal in control.changes:
                signal.connect(lambda *_, name=name: self._changed(name))

    def _changed(self, name: str) -> None:
        if self._showing:
            return
        self._writing = name
        try:
            self._write(name, self.controls[name].read())
        finally:
            self._writing = None

    def show(self, name: str, value: object) -> None:
        """Show ``value`` in ``name``'s control (unless it comes from that control, or the control says so already:
        no echo while the user types, and a slider's tick reads its control once)."""
        control = self.controls.get(name)
        if control is None or name == self._writing or control.read() == value:
            return
        self._showing = True
        try:
            control.show(value)
        finally:
            self._showing = False


def choice_box(about: About) -> QComboBox:
    """A box of a setting's choices (or the values it offers), in the window's words."""
    values = about.choices or about.offers
    labels = about.choice_labels or values
    if len(labels) != len(values):
        raise ValueError(f"{len(labels)} choice labels for {len(values)} choices")
    box = QComboBox()
    for label, value in zip(labels, values, strict=True):
        box.addItem(label, value)
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    box.setMinimumContentsLength(COMBO_CHARACTERS)
    return box


def select(box: QComboBox, value: object) -> None:
    """Select ``value`` in ``box``; a value it does not offer (a second GPU, ``cuda:1``) is added, shown as it is."""
    index = box.findData(value)
    if index < 0:
        box.addItem(str(value), value)
        index = box.count() - 1
    box.setCurrentIndex(index)


class WholeNumberEdit(QLineEdit):
    """A whole number from 0 to ``high`` beyond a spin box's 2^31 - 1 (a seed), typed as digits.

    Signals:
        valueChanged(): the user typed.
    """

    valueChanged = Signal()

    def __init__(self, high: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._high = high
        self.setValidator(QRegularExpressionValidator(QRegularExpression(rf"\d{{0,{len(str(high))}}}"), self))
        self.textEdited.connect(self.valueChanged)
        self.setValue(0)

    def value(self) -> int:
        return min(int(self.text() or 0), self._high)

    def setValue(self, value: int) -> None:  # noqa: N802 - Qt naming
        self.setText(str(value))


#: How a whole number's unit is shown after it.
_SUFFIXES = {"pixels": " px", "dpi": " dpi"}


def _whole_spin(about: About) -> QSpinBox:
    spin = QSpinBox()
    spin.setSingleStep(round(about.step))
    if about.unit in _SUFFIXES:
        spin.setSuffix(_SUFFIXES[about.unit])
    elif about.percent:
        spin.setSuffix(" %")
    bounded(spin, about, scale=100.0 if about.percent else 1.0)
    return spin


def _whole_value(spin: QSpinBox, about: About) -> Callable[[], int | float]:
    """Read a whole-number spin box: a percentage as a share; a value under the lowest allowed one, where 0 means
    something else, as the lowest (a tile of 100 px is one of 128)."""

    def read() -> int | float:
        value = spin.value()
        if about.percent:
            return value / 100
        if about.zero is not None and about.low is not None and 0 < value < about.low:
            return int(about.low)
        return value

    return read


def _show_whole(spin: QSpinBox, about: About) -> Callable[[Any], None]:
    return lambda value: spin.setValue(round(value * 100) if about.percent else value)
