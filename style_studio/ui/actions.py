"""The window's commands: actions with their shortcuts, and the menus and toolbar that show them."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSize
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow

_Key = QKeySequence.StandardKey


class WindowActions(QObject):
    """Every command of the window as a ``QAction``; the window connects their ``triggered`` signals.

    The actions are added to the window, so their shortcuts work wherever the focus is.
    """

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self._window = window
        self.open = self._make("Open content image…", _Key.Open)
        self.add_style = self._make("Add style image…", "Ctrl+Shift+O")
        self.paste = self._make("Paste as content", _Key.Paste)
        self.paste_style = self._make("Paste as style", "Ctrl+Shift+V")
        self.export = self._make("Export…", _Key.Save, "Save the full-resolution result with its settings embedded")
        self.save_preset = self._make("Save preset…")
        self.load_preset = self._make("Load preset…")
        self.quit = self._make("Quit", _Key.Quit)
        self.start = self._make("Start", ["Ctrl+Return", "Ctrl+Enter"], "Start stylising")
        self.stop = self._make("Stop", "Esc", "Stop and keep the picture so far")
        self.fit = self._make("Fit to window", "Ctrl+0")
        self.actual_size = self._make("Actual size (100%)", "Ctrl+1")
        self.zoom_in = self._make("Zoom in", _Key.ZoomIn)
        self.zoom_out = self._make("Zoom out", _Key.ZoomOut)
        self.split = self._make("Before / after", "B", "Compare with the content image: drag the line to move it")
        self.split.setCheckable(True)
        self.reset = self._make("Reset settings")
        self.about = self._make("About Style Studio")

    def _make(
        self, text: str, shortcut: QKeySequence.StandardKey | str | list[str] | None = None, tip: str = ""
    ) -> QAction:
        action = QAction(text, self._window)
        if isinstance(shortcut, list):
            action.setShortcuts([QKeySequence(s) for s in shortcut])
        elif shortcut is not None:
            action.setShortcut(shortcut)
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        self._window.addAction(action)
        return action

    def install(self, docks: list[QDockWidget]) -> None:
        """Build the menu bar (``docks`` can be shown and hidden from View) and the toolbar."""
        menu = self._window.menuBar()
        sections: dict[str, list[QAction | None]] = {
            "&File": [self.open, self.add_style, self.paste, self.paste_style, None, self.export, None,
                      self.load_preset, self.save_preset, None, self.quit],
            "&Run": [self.start, self.stop],
            "&View": [self.fit, self.actual_size, self.zoom_in, self.zoom_out, self.split, None,
                      *(dock.toggleViewAction() for dock in docks)],
            "&Settings": [self.reset],
            "&Help": [self.about],
        }  # fmt: skip
        for title, actions in sections.items():
            submenu = menu.addMenu(title)
            for action in actions:
                submenu.addSeparator() if action is None else submenu.addAction(action)
        toolbar = self._window.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setIconSize(QSize(18, 18))
        for action in (self.open, self.add_style, None, self.start, self.stop, None, self.export, None,
                       self.fit, self.actual_size, self.split):  # fmt: skip
            toolbar.addSeparator() if action is None else toolbar.addAction(action)
