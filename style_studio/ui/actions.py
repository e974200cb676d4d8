"""The window's commands: actions with their shortcuts, and the menus and toolbar that show them."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSize
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow

from ..core import settings as settings_mod

_Key = QKeySequence.StandardKey
PRESET_TIPS = {
    "instant": "The instant look alone: a network paints the photo in a second; Start runs no optimisation",
    "tuned": "The look tuned to the painting: the first Start tunes it (a minute or two), the next photo in the "
    "same painting is painted at once",
    "quick": "A first look soon: most iterations at a small first scale, from the painting's colours",
    "default": "The default settings for the picture (your size, weights and loss weights stay)",
    "best": "The most like the painting: its colours and strokes, every iteration at full size",
}


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
        self.tune = self._make(
            "Tune the look",
            "Ctrl+T",
            "Tune the instant look to the painting through VGG19 (a minute or two), then show it before Start; "
            "it is kept for the next photo in this painting, and Stop keeps what it learnt so far",
        )
        self.fit = self._make("Fit to window", "Ctrl+0")
        self.actual_size = self._make("Actual size (100%)", "Ctrl+1")
        self.zoom_in = self._make("Zoom in", _Key.ZoomIn)
        self.zoom_out = self._make("Zoom out", _Key.ZoomOut)
        self.split = self._make("Before / after", "B", "Compare with the content image: drag the line to move it")
        self.split.setCheckable(True)
        self.play = self._make(
            "Play / pause", "Space", "Play the video at its frame rate: the styled one once rendered (B compares)"
        )
        self.undo = self._make("Undo", _Key.Undo)
        self.redo = self._make("Redo", ["Ctrl+Shift+Z", "Ctrl+Y"])
        self.paint = self._make("Paint regions", "P", "Paint where each style goes on the picture")
        self.paint.setCheckable(True)
        self.eraser = self._make("Eraser", "E", "Take region paint away")
        self.eraser.setCheckable(True)
        self.show_regions = self._make(
            "Show regions", "R", "Draw the painted regions over the picture (always shown while painting)"
        )
        self.show_regions.setCheckable(True)
        self.add_region = self._make("Add region", "Ctrl+Shift+N", "A new region to paint")
        self.load_mask = self._make("Load region mask…", tip="A colour-coded or greyscale mask picture")
        self.brush_smaller = self._make("Smaller brush", "[")
        self.brush_larger = self._make("Larger brush", "]")
        self.style_map = self._make(
            "Style map", "M", "Where the picture is still furthest from the style, at the chosen layer"
        )
        self.style_map.setCheckable(True)
        self.add_to_queue = self._make(
            "Add to queue", "Ctrl+Shift+Return", "Queue the current photo, styles, settings and regions"
        )
        self.apply_to_folder = self._make(
            "Apply to folder…", tip="Queue every picture in a folder with the current styles, settings and regions"
        )
        self.style_clip = self._make(
            "Render video…",
            "Ctrl+Shift+R",
            "Style every frame of the content video and write the video, with its sound",
        )
        self.timelapse = self._make(
            "Keep previews for a timelapse…",
            tip="Each run keeps its previews, from the start picture on, as numbered pictures with a log, in a "
            "folder of its own inside the folder you choose",
        )
        self.timelapse.setCheckable(True)
        self.reset = self._make("Reset settings")
        self.reset_layout = self._make("Reset layout", tip="The picture first: the panels where they were at first")
        #: Settings → the built-in presets, by name (``settings.PRESETS``).
        self.presets = {
            name: self._make(title, tip=PRESET_TIPS[name]) for name, title in settings_mod.PRESET_NAMES.items()
        }
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
            "&Edit": [self.undo, self.redo],
            "&Regions": [self.add_region, self.load_mask, None, self.paint, self.eraser, self.brush_smaller,
                         self.brush_larger, None, self.show_regions],
            "&Run": [self.start, self.stop, None, self.tune, None, self.timelapse, None, self.style_clip, None,
                     self.add_to_queue, self.apply_to_folder],
            "&View": [self.fit, self.actual_size, self.zoom_in, self.zoom_out, self.split, self.play, self.style_map,
                      None, *(dock.toggleViewAction() for dock in docks), None, self.reset_layout],
            "&Settings": [*self.presets.values(), None, self.reset],
            "&Help": [self.about],
        }  # fmt: skip
        for title, actions in sections.items():
            submenu = menu.addMenu(title)
            for action in actions:
                submenu.addSeparator() if action is None else submenu.addAction(action)
        toolbar = self._window.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setIconSize(QSize(18, 18))
        for action in (self.open, self.add_style, None, self.start, self.stop, self.tune, None, self.export,
                       None, self.fit, self.actual_size, self.split, None, self.paint, self.style_map):  # fmt: skip
            toolbar.addSeparator() if action is None else toolbar.addAction(action)
