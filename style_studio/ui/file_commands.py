"""The window's file commands: export a result, save and load presets, choose a weights file, take a drop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QMimeData
from PySide6.QtWidgets import QFileDialog, QWidget

from .. import __version__
from ..core import ImageLoadError, Output, picture_metadata
from .pictures import HistoryEntry
from .qt_images import images_from_mime
from .weights_dialog import WEIGHTS_FILTER

if TYPE_CHECKING:
    from ..core import Regions, Settings
    from .controls import ControlsPanel
    from .documents import Documents
    from .feedback import Feedback
    from .kept_history import KeptHistory
    from .state import WindowState
    from .store import Store


class FileCommands:
    """Export, presets and the weights file: the window's commands that read and write the user's files.

    Args:
        state: the result shown (what Export writes) and what is written with it: the pictures' names, the
            settings, the print resolution; it hears when an export starts and ends.
        controls: takes a weights file.
        documents: reads and writes the files; ``kept``: the results kept until exported.
        apply_settings: shows a preset's settings (with a message); ``restore_regions``: its regions.
        store: remembers the weights file.
        feedback, parent: tells the user; the dialogs' parent.
    """

    def __init__(
        self,
        *,
        state: WindowState,
        controls: ControlsPanel,
        documents: Documents,
        kept: KeptHistory,
        apply_settings: Callable[[Settings, str], None],
        restore_regions: Callable[[Regions | None, str], None],
        store: Store,
        feedback: Feedback,
        parent: QWidget,
    ) -> None:
        self.state, self.controls = state, controls
        self.documents, self.kept, self.apply_settings, self.restore_regions = (
            documents,
            kept,
            apply_settings,
            restore_regions,
        )
        self.store, self.feedback, self.parent = store, feedback, parent
        self._exporting: HistoryEntry | None = None  # the entry being exported: let go of once written

    def export_dialog(self, *_: object, entry: HistoryEntry | None = None) -> None:
        if (entry or self.state.shown) is None:
            self.feedback.error("Nothing to export yet: press Start to make a picture first.")
            return
        content = self.state.photo
        chosen = self.documents.ask_export_path(content.path if content else None, self._inputs(entry))
        if chosen is not None:
            path, bit_depth = chosen
            self.export_to(path, entry=entry, bit_depth=bit_depth)

    def _inputs(self, entry: HistoryEntry | None) -> tuple[Path, ...]:
        """The files an export of ``entry`` (or the picture shown) must not replace: those it was made from, and
        those open now (the photo, the styles, the mask)."""
        made_from = entry or self.state.shown
        return (*(made_from.inputs if made_from is not None else ()), *self.state.input_files())

    def export_to(self, path: Path, *, entry: HistoryEntry | None = None, bit_depth: int = 8) -> bool:
        """Start writing the result (or a history entry) with its settings embedded.

        16 bits per channel write the run's own values (PNG and TIFF); the
        photo's print resolution (DPI) is kept. ``documents.exportFinished``
        reports the outcome. Returns False when nothing could be started.
        """
        entry = entry or self.state.shown
        if entry is None:
            self.feedback.error("Nothing to export yet: press Start to make a picture first.")
            return False
        if not self.kept.holds(entry):  # the instant look: kept in the history like a run's picture, once exported
            entry = self.kept.add(entry)
            self.state.show(entry)
        content, styles = self.state.photo, self.state.styles
        metadata = picture_metadata(
            entry.settings,
            weights_label=entry.weights_label,
            app_version=__version__,
            content=content.name if content else None,
            styles=[style.name for style in styles],
            regions=entry.regions,
            key=entry.key,
        )
        picture = entry.deep if bit_depth == 16 and entry.deep is not None else entry.result
        chosen_dpi = self.state.print_dpi
        dpi = (chosen_dpi, chosen_dpi) if chosen_dpi else (content.image.info.get("dpi") if content else None)
        output = Output(path, self._inputs(entry))
        started = self.documents.export(picture, output, metadata, bit_depth=bit_depth, dpi=dpi)
        if started:
            self._exporting = entry
        self.state.set_exporting(self.documents.exporting)
        return started

    def choose_timelapse_folder(self, on: bool) -> bool:
        """Keep each run's previews (``on``: in a folder the user chooses now), or no longer; whether they are kept."""
        if on:
            start = self.store.timelapse_folder() or Path.home()
            chosen = QFileDialog.getExistingDirectory(self.parent, "Keep previews for a timelapse in", str(start))
            if chosen:
                self.store.save_timelapse_folder(Path(chosen))
                self.feedback.info(f"Each run keeps its previews in a new folder inside {chosen}")
                return True
        self.store.save_timelapse_folder(None)
        return False

    def exported(self, _path: str, error: str) -> None:
        entry, self._exporting = self._exporting, None
        if entry is not None and not error:
            self.kept.let_go(entry)  # exported: the kept copy is no longer needed
        self.state.set_exporting(self.documents.exporting)

    def drop(self, mime: QMimeData) -> bool:
        """A drop on the picture: an exported image restores its settings; another image becomes the content.

        Returns whether the drop was taken.
        """
        for url in mime.urls() if mime.hasUrls() else []:
            if not url.isLocalFile():
                continue
            path = Path(url.toLocalFile())
            embedded, settings = self.documents.settings_in_picture(path)
            if embedded:
                if settings is not None:
                    self.apply_settings(settings, f"Settings restored from {path.name}")
                    self.restore_regions(self.documents.regions_in_picture(path), path.name)
                return True
        try:
            items = images_from_mime(mime)
        except ImageLoadError as exc:
            self.feedback.error(str(exc))
            return False
        refusal = self.state.refusal(items[0], "content")
        if refusal is not None:
            self.feedback.error(refusal)
            return False
        self.state.set_photo(items[0])
        return True

    def save_preset_dialog(self) -> None:
        path = self.documents.ask_preset_to_save(str(self.state.open_dir()))
        if path is not None:
            self.save_preset(path)

    def save_preset(self, path: Path) -> bool:
        return self.documents.save_preset(path, self.state.settings, self.state.regions_for_run(painted_only=False))

    def load_preset_dialog(self) -> None:
        path = self.documents.ask_preset_to_load(str(self.state.open_dir()))
        if path is not None:
            self.load_preset(path)

    def load_preset(self, path: Path) -> bool:
        settings = self.documents.load_preset(path)
        if settings is not None:
            self.apply_settings(settings, f"Preset {path.name} loaded")
            self.restore_regions(self.documents.regions_in_preset(path), path.name)
        return settings is not None

    def choose_weights_file(self) -> None:
        known = self.store.weights_file()
        start = str(known.parent) if known else str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self.parent, "VGG19 weights file", start, WEIGHTS_FILTER)
        if path:
            self.use_weights_file(Path(path))

    def use_weights_file(self, path: Path) -> None:
        self.controls.set_weights_file(path)
        self.store.save_weights_file(path)
