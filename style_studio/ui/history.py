"""Results as a strip of thumbnails (kept across restarts until exported or removed): view, compare, restore;
a video rendered in the window is there too (its first frame), to play or find in its folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QPoint, QSize, Qt, QUrl, Signal, SignalInstance
from PySide6.QtGui import QAction, QDesktopServices, QIcon, QPixmap
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QMenu, QWidget

from .pictures import HistoryEntry
from .qt_images import pil_to_qimage

#: A thumbnail's longest side, in pixels.
THUMBNAIL = 96
#: Qt's largest widget size (QWIDGETSIZE_MAX).
QWIDGETSIZE_MAX = (1 << 24) - 1
#: Where an item keeps its entry's number, which stays when entries before it are removed.
_NUMBER = Qt.ItemDataRole.UserRole + 1


class HistoryStrip(QListWidget):
    """Signals carry the HistoryEntry: selected (view it), compare, restore, export, remove."""

    entrySelected = Signal(object)
    compareRequested = Signal(object)
    restoreRequested = Signal(object)
    exportRequested = Signal(object)
    removeRequested = Signal(object)
    failed = Signal(str)  # a video or its folder could not be opened: why

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setViewMode(QListWidget.ViewMode.IconMode)
        self.setFlow(QListWidget.Flow.LeftToRight)
        self.setWrapping(False)
        self.setIconSize(QSize(96, 96))
        self.setMovement(QListWidget.Movement.Static)
        self.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.setSpacing(4)
        self.lay_out(vertical=False)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.setToolTip(
            "Results kept until exported or removed: click to view, right-click to compare, restore settings or remove"
        )
        self.customContextMenuRequested.connect(self._menu)
        self.currentItemChanged.connect(self._current_changed)
        # A click on the selected entry shows it again (after a new photo replaced it in the view).
        self.itemClicked.connect(lambda item: self._current_changed(item, None))
        self.entries: list[HistoryEntry] = []

    def lay_out(self, vertical: bool) -> None:
        """A strip one thumbnail high (below or above the picture), or a grid as wide as a column beside it."""
        self.setWrapping(vertical)
        if vertical:
            self.setMinimumHeight(THUMBNAIL + 28)
            self.setMaximumHeight(QWIDGETSIZE_MAX)
        else:
            self.setFixedHeight(THUMBNAIL + 28)

    def add(self, entry: HistoryEntry) -> None:
        self.entries.append(entry)
        pixmap = QPixmap.fromImage(pil_to_qimage(entry.result))
        item = QListWidgetItem(
            QIcon(
                pixmap.scaled(96, 96, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)
            ),
            "",
        )
        item.setData(Qt.ItemDataRole.UserRole, len(self.entries) - 1)
        item.setData(_NUMBER, len(self.entries))
        self._label(item, entry)
        self.blockSignals(True)
        self.addItem(item)
        self.setCurrentItem(item)
        self.blockSignals(False)
        self.scrollToItem(item)

    def _label(self, item: QListWidgetItem, entry: HistoryEntry) -> None:
        """The entry's number and tooltip, and whether its video is missing now (shown, not forgotten)."""
        number = item.data(_NUMBER)
        item.setText(f"#{number} missing" if entry.missing else f"#{number}")
        item.setToolTip(entry.summary())
        item.setForeground(self.palette().placeholderText() if entry.missing else self.palette().text())

    def recheck(self) -> None:
        """Look again for the videos of the entries (a drive connected since): each shows whether it is there."""
        for row, entry in enumerate(self.entries):
            self._label(self.item(row), entry)

    def remove(self, entry: HistoryEntry) -> None:
        """Take an entry out of the strip (the others keep their numbers)."""
        index = next((n for n, e in enumerate(self.entries) if e is entry), None)
        if index is None:
            return
        del self.entries[index]
        self.blockSignals(True)
        self.takeItem(index)
        for row in range(index, self.count()):
            item = self.item(row)
            item.setData(Qt.ItemDataRole.UserRole, row)
        self.blockSignals(False)

    def entry(self, item: QListWidgetItem | None) -> HistoryEntry | None:
        if item is None:
            return None
        index: int = item.data(Qt.ItemDataRole.UserRole)
        return self.entries[index]

    def _current_changed(self, current: QListWidgetItem | None, _previous: QListWidgetItem | None) -> None:
        entry = self.entry(current)
        if entry is not None:
            self.entrySelected.emit(entry)

    def commands(self, entry: HistoryEntry) -> list[tuple[str, Callable[[], object]]]:
        """What the entry's menu offers: a picture is viewed, compared and exported; a video is opened."""

        def emitting(signal: SignalInstance) -> Callable[[], object]:
            return lambda: signal.emit(entry)

        if entry.video is not None:
            video = entry.video
            if entry.missing:
                return [
                    (f"Look for {video.name} again", self.recheck),
                    ("Restore its settings", emitting(self.restoreRequested)),
                    ("Remove from history", emitting(self.removeRequested)),
                ]
            return [
                ("Play the video", lambda: self._open(video)),
                ("Show in its folder", lambda: self._open(video.parent)),
                ("Restore its settings", emitting(self.restoreRequested)),
                ("Remove from history", emitting(self.removeRequested)),
            ]
        return [
            ("View", emitting(self.entrySelected)),
            ("Compare with the current result", emitting(self.compareRequested)),
            ("Restore its settings", emitting(self.restoreRequested)),
            ("Export…", emitting(self.exportRequested)),
            ("Remove from history", emitting(self.removeRequested)),
        ]

    def _open(self, path: Path) -> None:
        """Open a file or folder with the system's application for it."""
        if not path.exists():
            self.failed.emit(f"{path} is no longer there: it was moved or deleted.")
        elif not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            self.failed.emit(f"No application opens {path.name} on this system.")

    def _menu(self, point: QPoint) -> None:
        entry = self.entry(self.itemAt(point))
        if entry is None:
            return
        menu = QMenu(self)
        for text, command in self.commands(entry):
            action = QAction(text, menu)
            action.triggered.connect(lambda _=False, c=command: c())
            menu.addAction(action)
        menu.exec(self.mapToGlobal(point))
