"""Nothing cut: every label, button and choice the window shows at a laptop's and a desktop's screen size has room
for its whole text."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QStyle, QStyleOptionComboBox, QWidget
from superqt import QElidingLabel

#: Pixels of slack: a style's rounding.
SLACK = 1


def _plain(label: QLabel) -> str:
    if label.textFormat() == Qt.TextFormat.PlainText or not Qt.mightBeRichText(label.text()):
        return label.text()
    document = QTextDocument()
    document.setHtml(label.text())
    return document.toPlainText()


def cut_texts(window: QWidget) -> list[str]:
    """'<kind> "<text>": needs N px, has M' for each shown text its widget has no room for."""
    problems = []
    for widget in window.findChildren(QWidget):
        if not widget.isVisible() or widget.visibleRegion().isEmpty():
            continue
        metrics = widget.fontMetrics()
        if isinstance(widget, QElidingLabel):
            continue  # elides on purpose, with the whole text in its tooltip
        if isinstance(widget, QLabel) and widget.text() and widget.pixmap().isNull():
            room = widget.contentsRect().adjusted(widget.margin(), widget.margin(), -widget.margin(), -widget.margin())
            if widget.wordWrap():
                need, have = widget.heightForWidth(widget.width()), widget.height()
            else:
                lines = _plain(widget).splitlines() or [""]
                need, have = max(metrics.horizontalAdvance(line) for line in lines), room.width() - widget.indent()
            if need > have + SLACK:
                problems.append(f'label "{_plain(widget)}": needs {need} px, has {have}')
        elif isinstance(widget, QAbstractButton) and widget.text():
            hint = widget.sizeHint()
            if hint.width() > widget.width() + SLACK or hint.height() > widget.height() + SLACK:
                problems.append(f'button "{widget.text()}": needs {hint.width()}x{hint.height()}, '
                                f"has {widget.width()}x{widget.height()}")  # fmt: skip
        elif isinstance(widget, QComboBox) and widget.currentText():
            option = QStyleOptionComboBox()
            widget.initStyleOption(option)
            field = widget.style().subControlRect(
                QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, widget
            )
            need = metrics.horizontalAdvance(widget.currentText())
            if need > field.width() + SLACK:
                problems.append(f'choice "{widget.currentText()}": needs {need} px, has {field.width()}')
    return problems


@pytest.mark.parametrize("screen", [(1366, 768), (1920, 1080)], ids=["1366x768", "1920x1080"])
def test_every_text_the_window_shows_fits_at_a_laptops_and_a_desktops_size(make_window, qtbot, screen):
    window = make_window()
    window.resize(min(screen[0], 1600), min(screen[1], 1000))  # the size it opens at on that screen
    window.reset_layout()
    window.show()
    qtbot.waitExposed(window)
    qtbot.wait(50)
    assert cut_texts(window) == []
    window.controls.set_weights_file("/home/someone/Downloads/vgg19-hed-proxy.pth")
    qtbot.wait(50)
    assert cut_texts(window) == []
    window.controls.set_weights_file("/home/someone/Downloads/vgg19-imagenet-finetuned-on-paintings-v2.pth")
    window.controls.more.expand(animate=False)
    window.controls.more_layers.expand(animate=False)
    qtbot.wait(50)
    assert cut_texts(window) == []
    window.state.set("weights", "untrained")  # a run, and the window as it ends: the history, the run bar
    with qtbot.waitSignal(window.controller.finished, timeout=60_000):
        window.commands.start.trigger()
    qtbot.waitUntil(lambda: window.state.shown is not None)
    qtbot.wait(200)  # the status bar's layout follows its texts' change
    assert cut_texts(window) == []
