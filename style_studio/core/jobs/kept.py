"""Finished results kept on disk until they are exported or let go: a closed window or a crash loses none.

Each result is a PNG in the user's data folder (``results/``) with its
settings document embedded, as an export has, plus what the window's history
shows about it (weights, how the run ended, when). The window writes one when
a run ends, lists them at start, and removes one when it is exported or the
user removes it from the history.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from .. import settings as settings_mod
from ..errors import StyleStudioError
from ..io.files import data_folder
from ..io.imageio import load_image, read_metadata, save_image
from ..io.kept import Tell, read_kept
from ..objective.regions import Regions, from_document
from ..settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeptResult:
    """A kept result: its file, its picture (8-bit RGB), its settings document (``settings.dumps``'s) and what
    the document holds (its settings and regions)."""

    path: Path
    picture: Image.Image
    document: str
    settings: Settings
    regions: Regions | None = None

    def field(self, key: str, default: object = None) -> object:
        """A top-level entry of its document ("weights_label", "stop_reason", "created", ...)."""
        try:
            value = json.loads(self.document).get(key, default)
        except (ValueError, AttributeError):
            return default
        return value


class KeptResults:
    """The folder of kept results (by default ``results`` in the user's data folder)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else data_folder() / "results"

    def new_path(self) -> Path:
        """Where the next result goes: named by time, so that a listing is in the order they were made."""
        return self.folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}.png"

    def keep(self, picture: Image.Image, document: str, path: Path) -> None:
        """Write a result, atomically (ImageSaveError when it cannot be)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        save_image(picture, path, document, software="Style Studio (kept result)")

    def load(self, tell: Tell | None = None) -> list[KeptResult]:
        """Every kept result, oldest first; one that cannot be read is set aside beside the others (never deleted),
        and ``tell`` hears where."""
        found = []
        for path in sorted(self.folder.glob("*.png")) if self.folder.is_dir() else []:
            result = read_kept(path, _read_result, "a result kept in the history", tell=tell)
            if result is not None:
                found.append(result)
        return found

    @staticmethod
    def let_go(path: Path) -> None:
        """Remove a kept result (exported, or removed from the history by the user)."""
        path.unlink(missing_ok=True)


def _read_result(path: Path) -> KeptResult:
    document = read_metadata(path)
    if document is None:
        raise StyleStudioError(f"{path}: no settings are embedded")
    settings = settings_mod.loads(document, source=path.name)
    return KeptResult(path, load_image(path), document, settings, from_document(document, path.name))
