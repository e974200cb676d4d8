"""What the window remembers between sessions, in QSettings.

Values are read defensively: anything that no longer makes sense (a removed
layer, a missing file, a value of the wrong type) is dropped for the default,
never a crash at start.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from ..core import MAX_DPI, SettingsError, VideoOptions, is_layer
from ..core import settings as settings_mod
from ..core.about import shown

log = logging.getLogger(__name__)

_SETTINGS = "run/settings"
_CONTENT = "inputs/content"
_STYLES = "inputs/styles"
_WEIGHTS_FILE = "weights/file"
_GEOMETRY = "window/geometry"
_STATE = "window/state"
_ALL_LAYERS = "window/allLayers"
_MORE_SETTINGS = "window/moreSettings"
_SPEED = "runs/secondsPerMegapixelIteration"
_SPEED_COMPUTE = "runs/speedMeasuredOn"
_QUEUE_FOLDER = "queue/outputFolder"
_TIMELAPSE_FOLDER = "run/timelapse_folder"
_VIDEO_OPTIONS = "video/options"
_PRINT_DPI = "export/printDpi"

#: The slowest speed kept, in seconds per megapixel-iteration: an hour is a thousand times the slowest CPU's.
SLOWEST = 3600.0


#: How deep a saved value may nest; a value nested deeper is read as null (the setting then takes its default).
DEEPEST = 64


def _json(text: str) -> object:
    """The JSON ``text`` holds, each value nested deeper than ``DEEPEST`` read as null, so that one such value
    costs that value alone; None for text that is not JSON."""
    try:
        return json.loads(_pruned(text, DEEPEST))
    except (ValueError, RecursionError):
        return None


def _pruned(text: str, deepest: int) -> str:
    """``text`` with every array or object that opens deeper than ``deepest`` replaced by ``null``: Python's JSON
    reader recurses, and a value nested 50,000 deep would make it give up on the whole document."""
    if text.count("[") + text.count("{") <= deepest:
        return text
    kept: list[str] = []
    depth, start, cut_at = 0, 0, -1  # cut_at: the depth of the value being cut out, -1 while none is
    in_string = escaped = False
    for position, char in enumerate(text):
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest and cut_at < 0:
                kept.append(text[start:position] + "null")
                cut_at = depth
        elif char in "]}":
            if depth == cut_at:
                cut_at, start = -1, position + 1
            depth -= 1
    kept.append(text[start:] if cut_at < 0 else "")
    return "".join(kept)


class Store:
    """Typed access to the app's QSettings."""

    def __init__(self, qsettings: QSettings | None = None) -> None:
        self.qs = qsettings or QSettings()

    def queue_folder(self) -> Path | None:
        """Where queued pictures were last sent (None: not chosen yet)."""
        value = self.qs.value(_QUEUE_FOLDER, None)
        return Path(value) if isinstance(value, str) and value else None

    def save_queue_folder(self, folder: Path) -> None:
        self.qs.setValue(_QUEUE_FOLDER, str(folder))

    def timelapse_folder(self) -> Path | None:
        """Where the user's runs keep their previews, each in a folder of its own (None: they are not kept)."""
        value = self.qs.value(_TIMELAPSE_FOLDER, None)
        return Path(value) if isinstance(value, str) and value else None

    def save_timelapse_folder(self, folder: Path | None) -> None:
        self.qs.setValue(_TIMELAPSE_FOLDER, str(folder) if folder is not None else "")

    def video_options(self) -> VideoOptions:
        """The video options last shown; each saved value that is still valid on its own, the rest default."""
        saved = _json(str(self.qs.value(_VIDEO_OPTIONS, "{}")))
        options = VideoOptions()
        for name in (f.name for f in dataclasses.fields(VideoOptions)):
            if isinstance(saved, dict) and name in saved:
                candidate = dataclasses.replace(options, **{name: saved[name]})
                if not candidate.problems():
                    options = candidate
        return options

    def save_video_options(self, options: VideoOptions) -> None:
        self.qs.setValue(_VIDEO_OPTIONS, json.dumps(dataclasses.asdict(options)))

    def load_settings(self) -> settings_mod.Settings:
        text = self.qs.value(_SETTINGS, None)
        if not isinstance(text, str) or not text:
            return settings_mod.DEFAULTS
        try:
            return settings_mod.loads(text, source="saved settings")
        except SettingsError as exc:
            log.warning("ignoring saved settings (%s); keeping each value that is still valid", exc)
        except Exception:  # whatever is wrong with them, the window opens
            log.exception("ignoring saved settings; keeping each value that is still valid")
        return self._salvage(text)

    def _salvage(self, text: str) -> settings_mod.Settings:
        """Keep every saved field that is still valid on its own; default the rest."""
        document = _json(text)
        saved = document.get("settings", {}) if isinstance(document, dict) else {}
        result = settings_mod.DEFAULTS
        if not isinstance(saved, dict):
            return result
        if isinstance(saved.get("style_layers"), dict):
            known = {k: v for k, v in saved["style_layers"].items() if is_layer(str(k))}
            saved = {**saved, "style_layers": known}
        if isinstance(saved.get("content_layers"), list):
            saved = {**saved, "content_layers": [n for n in saved["content_layers"] if is_layer(str(n))] or ["relu4_2"]}
        for key, value in saved.items():
            try:
                result = settings_mod.from_dict({key: value}, base=result)
            except SettingsError:
                continue
            except Exception:  # whatever else is wrong with one value, the window opens with the rest
                log.exception("ignoring the saved value of %s", shown(key))
        return result

    def print_dpi(self) -> int:
        """The print resolution exports carry, last chosen (0: the photo's own; a value out of range: 0)."""
        try:
            dpi = int(str(self.qs.value(_PRINT_DPI, "0")))
        except ValueError:
            return 0
        return dpi if 0 <= dpi <= MAX_DPI else 0

    def save_print_dpi(self, dpi: int) -> None:
        self.qs.setValue(_PRINT_DPI, str(dpi))

    def save_settings(self, settings: settings_mod.Settings) -> None:
        self.qs.setValue(_SETTINGS, settings_mod.dumps(settings))

    def _path(self, key: str) -> Path | None:
        value = self.qs.value(key, None)
        if isinstance(value, str) and value and Path(value).is_file():
            return Path(value)
        return None

    def content_path(self) -> Path | None:
        return self._path(_CONTENT)

    def style_paths(self) -> list[Path]:
        value = self.qs.value(_STYLES, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            return []
        return [Path(v) for v in value if isinstance(v, str) and Path(v).is_file()]

    def save_inputs(self, content: Path | None, styles: list[Path]) -> None:
        self.qs.setValue(_CONTENT, str(content) if content else "")
        self.qs.setValue(_STYLES, [str(p) for p in styles])

    def weights_file(self) -> Path | None:
        return self._path(_WEIGHTS_FILE)

    def save_weights_file(self, path: Path) -> None:
        self.qs.setValue(_WEIGHTS_FILE, str(path))

    def geometry(self) -> tuple[QByteArray | None, QByteArray | None]:
        geometry, state = self.qs.value(_GEOMETRY, None), self.qs.value(_STATE, None)
        return (
            geometry if isinstance(geometry, QByteArray) else None,
            state if isinstance(state, QByteArray) else None,
        )

    def save_geometry(self, geometry: QByteArray, state: QByteArray) -> None:
        self.qs.setValue(_GEOMETRY, geometry)
        self.qs.setValue(_STATE, state)

    def show_all_layers(self) -> bool:
        return self._flag(_ALL_LAYERS)

    def save_show_all_layers(self, value: bool) -> None:
        self.qs.setValue(_ALL_LAYERS, "true" if value else "false")

    def show_more_settings(self) -> bool:
        return self._flag(_MORE_SETTINGS)

    def save_show_more_settings(self, value: bool) -> None:
        self.qs.setValue(_MORE_SETTINGS, "true" if value else "false")

    def _flag(self, key: str) -> bool:
        return str(self.qs.value(key, "false")).lower() == "true"

    def speed(self) -> tuple[float, str] | None:
        """(seconds per megapixel-iteration, the device and precision it was measured on) of the last run; None
        when none was measured, or what is kept is no speed a computer has (0, negative, infinite, or over
        ``SLOWEST`` seconds)."""
        try:
            seconds = float(str(self.qs.value(_SPEED, "")))
        except ValueError:
            return None
        return (seconds, str(self.qs.value(_SPEED_COMPUTE, ""))) if 0 < seconds <= SLOWEST else None

    def save_speed(self, seconds: float, compute: str) -> None:
        self.qs.setValue(_SPEED, f"{seconds:.6g}")
        self.qs.setValue(_SPEED_COMPUTE, compute)

    def sync(self) -> None:
        self.qs.sync()
