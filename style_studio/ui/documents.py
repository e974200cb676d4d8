"""Files the user keeps: presets (settings as JSON) and exported pictures with their settings embedded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image
from PySide6.QtCore import QObject, QStandardPaths, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from .. import APP_NAME, __version__
from ..core import (
    FORMATS,
    CancelToken,
    ImageLoadError,
    Output,
    RegionError,
    Regions,
    Settings,
    SettingsError,
    from_document,
    read_metadata,
    save_image,
    write_atomically,
)
from ..core import settings as settings_mod
from ..resources import is_bundled
from .background import BackgroundTask, Report, TaskOutcome

EXPORT_FILTERS = {
    "PNG image (*.png)": ".png",
    "JPEG image (*.jpg *.jpeg)": ".jpg",
    "WebP image (*.webp)": ".webp",
    "TIFF image (*.tif *.tiff)": ".tif",
    "PNG, 16 bits per channel, for print (*.png)": ".png",
    "TIFF, 16 bits per channel, for print (*.tif *.tiff)": ".tif",
}
#: The filters that write 16 bits per channel.
DEEP_FILTERS = frozenset(f for f in EXPORT_FILTERS if "16 bits" in f)
PRESET_FILTER = "Style Studio preset (*.json);;All files (*)"


def pictures_folder() -> Path:
    """The user's Pictures folder (their home where the platform has none)."""
    folder = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.PicturesLocation)
    return Path(folder) if folder and Path(folder).is_dir() else Path.home()


def export_folder(content: Path | None) -> Path:
    """Where an export is suggested: beside the photo, unless the photo is one of the app's own samples."""
    if content is None or is_bundled(content):
        return pictures_folder()
    return content.parent


class Documents(QObject):
    """Reads and writes presets and exports; reports through ``info`` and ``error``.

    An export is written by a background ``BackgroundTask`` (a large TIFF takes seconds),
    atomically; ``exportFinished`` says how it went.

    Signals:
        info(str), error(str): what to tell the user.
        exportFinished(str, str): the path, and the error ("" when it worked).
    """

    info = Signal(str)
    error = Signal(str)
    exportFinished = Signal(str, str)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self._export: BackgroundTask[None, None] | None = None

    # -- presets ------------------------------------------------------------------

    def ask_preset_to_save(self, start: str) -> Path | None:
        path, _ = QFileDialog.getSaveFileName(self._parent, "Save preset", start, PRESET_FILTER)
        if not path:
            return None
        return Path(path) if Path(path).suffix else Path(path).with_suffix(".json")

    def ask_preset_to_load(self, start: str) -> Path | None:
        path, _ = QFileDialog.getOpenFileName(self._parent, "Load preset", start, PRESET_FILTER)
        return Path(path) if path else None

    def save_preset(self, path: Path, settings: Settings, regions: Regions | None = None) -> bool:
        """Write the settings (and the regions, when there are some) as a preset."""
        extra = {"regions": regions.to_json()} if regions else {}
        text = settings_mod.dumps(settings, app_version=__version__, **extra)
        try:
            write_atomically(path, lambda out: out.writelines([text.encode("utf-8")]))
        except OSError as exc:
            self.error.emit(f"{path}: could not save the preset ({exc.strerror or exc})")
            return False
        self.info.emit(f"Preset saved to {path.name}")
        return True

    def load_preset(self, path: Path) -> Settings | None:
        try:
            text = path.read_bytes()
        except OSError as exc:
            self.error.emit(f"{path}: could not read the preset ({exc.strerror or exc})")
            return None
        return self.parse(text, path.name)

    def settings_in_picture(self, path: Path) -> tuple[bool, Settings | None]:
        """(whether ``path`` is a picture with settings embedded, those settings if they are valid)."""
        try:
            text = read_metadata(path)
        except ImageLoadError:
            return False, None
        if text is None:
            return False, None
        return True, self.parse(text, path.name)

    def regions_in_preset(self, path: Path) -> Regions | None:
        """The regions a preset keeps, or None (none, or unreadable: said through ``error``)."""
        try:
            return self._regions(path.read_bytes(), path.name)
        except OSError:
            return None

    def regions_in_picture(self, path: Path) -> Regions | None:
        """The regions embedded in an exported picture, or None."""
        try:
            text = read_metadata(path)
        except ImageLoadError:
            return None
        return self._regions(text, path.name) if text is not None else None

    def _regions(self, text: str | bytes, source: str) -> Regions | None:
        try:
            return from_document(text, source)
        except RegionError as exc:
            self.error.emit(str(exc))
            return None

    def parse(self, text: str | bytes, source: str) -> Settings | None:
        """A settings document (preset or embedded metadata), or None after saying what is wrong with it."""
        try:
            return settings_mod.loads(text, source=source).validate()
        except SettingsError as exc:
            self.error.emit(str(exc))
            return None

    # -- export --------------------------------------------------------------------

    def ask_export_path(self, content: Path | None, inputs: tuple[Path, ...] = ()) -> tuple[Path, int] | None:
        """The file to export to and its bits per channel (a 16-bit filter chosen), or None when cancelled.

        ``inputs``: the files the picture was made from. One of them is refused in the user's words before
        anything asks whether to replace it (the dialog's own question would come first, then the refusal).
        """
        stem = content.stem if content is not None else "stylised"
        suggestion = str(export_folder(content) / f"{stem}-styled.png")
        filters = ";;".join(EXPORT_FILTERS)
        path, chosen = QFileDialog.getSaveFileName(
            self._parent, "Export picture", suggestion, filters, options=QFileDialog.Option.DontConfirmOverwrite
        )
        if not path:
            return None
        bit_depth = 16 if chosen in DEEP_FILTERS else 8
        target = Path(path)
        if target.suffix.lower() not in FORMATS:
            target = target.with_suffix(EXPORT_FILTERS.get(chosen, ".png"))
        source = Output(target, inputs).same_as_input()
        if source is not None:
            what = "your photo" if content is not None and source == content else "a picture this one is made from"
            self.error.emit(f"{target.name} is {what}: export the picture under another name.")
            return None
        if (
            target.exists()
            and QMessageBox.question(self._parent, "Replace file?", f"{target.name} already exists. Replace it?")
            != QMessageBox.StandardButton.Yes
        ):
            return None
        if bit_depth == 16 and target.suffix.lower() not in (".png", ".tif", ".tiff"):
            bit_depth = 8  # a .jpg typed under a 16-bit filter: the name decides
        return target, bit_depth

    @property
    def exporting(self) -> bool:
        return self._export is not None

    def export(
        self,
        image: Image.Image | np.ndarray,
        output: Output,
        metadata: str,
        *,
        bit_depth: int = 8,
        dpi: tuple[float, float] | None = None,
    ) -> bool:
        """Start writing ``image`` as ``output`` with ``metadata`` embedded; False when one is still being written.

        ``image``: a picture, or for 16 bits per channel the run's (H, W, 3) uint16 result.
        ``output``: the file, guarded: never one of the pictures the result was made from.
        """
        path = output.path
        if self._export is not None:
            self.error.emit("An export is still being written; try again in a moment.")
            return False

        def write(report: Report[None], cancel: CancelToken) -> None:
            save_image(image, output, metadata, software=f"{APP_NAME} {__version__}", bit_depth=bit_depth, dpi=dpi)

        job = BackgroundTask(write, "style-studio-export", failure=f"{path}: the export failed")
        job.on_end(lambda outcome: self._exported(path, outcome))
        self._export = job
        self.info.emit(f"Exporting {path.name}…")
        job.start()
        return True

    def _exported(self, path: Path, outcome: TaskOutcome[None]) -> None:
        self._export = None
        if outcome.error:
            self.error.emit(outcome.error)
        else:
            self.info.emit(f"Exported {path.name}")
        self.exportFinished.emit(str(path), outcome.error or "")

    def wait(self) -> None:
        """Let an export in progress finish (closing the window): it is never cut off."""
        if self._export is not None:
            self._export.wait()
