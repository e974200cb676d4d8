"""The window's model, free of Qt: the pictures, the settings, the result shown and the runs, with change events.

In the manner of napari's evented models (with psygnal, napari's signals
without Qt): a widget writes the one setting it shows (``set``); the state
emits ``setting_changed(name, value)`` for that field only; the controls show
it, the run under way takes it when it is live, and the plan is made again
only when it shapes the plan (``PLANNED``). Nothing rebuilds ``Settings`` from
the widgets. Loading a whole settings document (a preset, Reset, a restored
picture) emits each field that changed.

``WindowState`` adds the rest of what the window shows and the user edits: the
photo and the styles the user gave, the result in the picture area, the print
resolution, the style map's layer, the regions with their brush and the region
being painted, and whether a picture, a video or an export is under way. What the commands
may do follows from it alone (``can_start``, ``can_stop``, ``can_export``,
``can_render_video``, ``can_play``); it says when that may have changed
(``commands_changed``), and the window's actions listen.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from psygnal import Signal, SignalInstance

from ..core import About, Settings, StyleStudioError, VideoOptions, check_image_fits, described, input_files
from ..core import settings as settings_mod
from ..core.about import about

if TYPE_CHECKING:
    from ..core import Regions
    from .pictures import HistoryEntry, InputImage

_Fields = TypeVar("_Fields")


def shapes_the_plan(name: str) -> bool:
    """Whether a change of setting ``name`` needs the run's plan made again (``About.plans``: the loss's weights
    leave the scales, memory and time as they are)."""
    return name not in settings_mod.NAMES or settings_mod.about(name).plans


class SettingsState:
    """The settings the window shows and starts runs from.

    Signals:
        setting_changed(str, object): one setting took a new value (its name, the value).
    """

    setting_changed = Signal(str, object)

    def __init__(self, settings: Settings = settings_mod.DEFAULTS) -> None:
        self._settings = settings

    @property
    def settings(self) -> Settings:
        return self._settings

    def set(self, name: str, value: Any) -> None:
        """Take a new value of one setting (checked when a run starts, as the whole); emits only when it changed."""
        before, self._settings = self._settings, _with_field(self._settings, name, value)
        if self._settings is not before:
            self.setting_changed.emit(name, value)

    def load(self, settings: Settings) -> None:
        """Take a whole settings document; emits each setting that changed, in the fields' order."""
        before, self._settings = self._settings, settings
        _emit_changes(before, settings, self.setting_changed)


def _with_field(values: _Fields, name: str, value: Any) -> _Fields:
    """``values`` (a frozen dataclass) with field ``name`` at ``value`` (itself when the field has that value)."""
    if getattr(values, name) == value:
        return values
    return dataclasses.replace(values, **{name: value})  # type: ignore[type-var]


def _emit_changes(before: object, after: object, changed: SignalInstance) -> None:
    """Emit (name, value) on ``changed`` for each field of ``after`` that differs from ``before``'s, in order (once
    the new values are in place: a listener reads them)."""
    if after is before:
        return
    for field in dataclasses.fields(after):  # type: ignore[arg-type]
        value = getattr(after, field.name)
        if getattr(before, field.name) != value:
            changed.emit(field.name, value)


def regions_for_run(regions: Regions | None, *, painted_only: bool = True) -> Regions | None:
    """A copy of ``regions`` to hand to a run or a file (None when there are none), the unpainted ones left out."""
    if regions is not None and painted_only:
        regions = regions.painted()
    return regions.copy() if regions else None


#: A style's blend weight as its row shows it: a share of the largest weight (the settings keep the weights).
BLEND_SHARE: Final = About(
    "a style's blend weight, as a share of the largest", low=0, high=1, step=0.01,
    tip="Blend: how much of this style goes into the picture, relative to the other styles",
)  # fmt: skip


@dataclass(frozen=True)
class Brush:
    """How the regions are painted: the window's, not the picture's (a stroke's result is in the masks)."""

    radius: int = dataclasses.field(default=20, metadata=about(
        "the brush's radius in pixels of the photo", low=1, high=400, unit="pixels", label="Brush size",
        tip="Brush radius in pixels of the photo ([ and ] change it)"))  # fmt: skip
    softness: float = dataclasses.field(default=0.5, metadata=about(
        "the share of the brush's radius that fades out", low=0, high=1, step=0.01, label="Soft edge",
        tip="Soft edge: the share of the brush that fades out"))  # fmt: skip
    erasing: bool = dataclasses.field(default=False, metadata=about(
        "take paint away from every region rather than paint the one selected", label="Eraser",
        tip="Take paint away from every region (E)"))  # fmt: skip

    @property
    def hardness(self) -> float:
        """The share of the radius painted at full coverage (``Stroke``'s hardness)."""
        return 1 - self.softness

    def resized(self, factor: float) -> int:
        """The radius ``factor`` times this one, a pixel at least further each way, within its range."""
        return int(within(round(self.radius * factor + (1 if factor > 1 else -1) * 0.5), described(Brush)["radius"]))


def within(value: float, described_as: About) -> float:
    """``value`` brought into the range ``described_as`` says (a bound it lacks does not bound)."""
    if described_as.low is not None:
        value = max(value, described_as.low)
    if described_as.high is not None:
        value = min(value, described_as.high)
    return value


class RunStatus(enum.Enum):
    """Where a run (a picture's or a video's) stands."""

    IDLE = "idle"
    RUNNING = "running"
    STOPPING = "stopping"  # asked to stop: it ends after its current step


class WindowState(SettingsState):
    """Everything the window shows, as values: what it starts runs from, what Export writes, what can be done.

    Signals (besides ``setting_changed``):
        photo_changed(object): the photo (an ``InputImage``; None when there is none).
        styles_changed(tuple): the style pictures, in the list's order.
        shown_changed(object): the result in the picture area (a ``HistoryEntry``), or None for the photo.
        print_dpi_changed(int): the print resolution exports carry (0: the photo's own).
        video_changed(str, object): one of the video's options took a new value (its name, the value).
        style_map_changed(object): the layer whose style map lies over the picture (None: none).
        regions_changed(): the painted regions changed (a stroke ended, a region changed, undo, a mask loaded).
        mask_changed(object): the mask file the regions were loaded from (None: none).
        brush_changed(str, object): one of the brush's fields took a new value (its name, the value).
        region_selected(int): the region being painted (-1: none).
        commands_changed(): what can be started, stopped, exported or rendered may differ now.
    """

    photo_changed = Signal(object)
    styles_changed = Signal(tuple)
    shown_changed = Signal(object)
    print_dpi_changed = Signal(int)
    video_changed = Signal(str, object)
    style_map_changed = Signal(object)
    regions_changed = Signal()
    mask_changed = Signal(object)
    brush_changed = Signal(str, object)
    region_selected = Signal(int)
    commands_changed = Signal()

    def __init__(self, settings: Settings = settings_mod.DEFAULTS) -> None:
        super().__init__(settings)
        self._photo: InputImage | None = None
        self._styles: tuple[InputImage, ...] = ()
        self._mask: Path | None = None
        self._shown: HistoryEntry | None = None
        self._print_dpi = 0
        self._video = VideoOptions()
        self._style_map: str | None = None
        self._regions: Regions | None = None
        self._brush = Brush()
        self._selected_region = -1
        self._picture_run = RunStatus.IDLE
        self._video_run = RunStatus.IDLE
        self._exporting = False

    # -- values --------------------------------------------------------------------------

    @property
    def photo(self) -> InputImage | None:
        return self._photo

    @property
    def styles(self) -> tuple[InputImage, ...]:
        return self._styles

    @property
    def mask(self) -> Path | None:
        """The mask file the regions were loaded from, while they have regions (an input of the run)."""
        return self._mask

    def open_dir(self) -> Path:
        """Where file dialogs start: the photo's folder, else the home folder."""
        photo = self._photo
        return photo.path.parent if photo is not None and photo.path is not None else Path.home()

    def refusal(self, item: InputImage, role: str) -> str | None:
        """Why ``item`` cannot be the photo (``role`` "content") or a style ("style") at the settings shown, said
        for the user; None: it can. A style is a picture, and each must be large enough for the network."""
        if role == "style" and item.clip is not None:
            return f"{item.name} is a video: a style is a picture (a painting, a texture)"
        settings = self._settings
        layers = list(settings.content_layers) + list(settings.active_style_layers)
        longest = settings.size if role == "content" else settings.style_side()
        try:
            if layers:
                check_image_fits(item.image, longest, layers, f"the {role} image")
        except StyleStudioError as exc:
            return f"{item.name}: {exc}"
        return None

    def input_files(self) -> tuple[Path, ...]:
        """Every file a run of what is shown now reads: the photo or clip, the styles, the regions' mask."""
        photo = self._photo.path if self._photo is not None else None
        return input_files(photo, (style.path for style in self._styles), self._mask)

    @property
    def shown(self) -> HistoryEntry | None:
        """The result in the picture area, which Export writes (None: the photo is shown)."""
        return self._shown

    @property
    def print_dpi(self) -> int:
        return self._print_dpi

    @property
    def video(self) -> VideoOptions:
        """How Render video makes a clip's frames after the first."""
        return self._video

    @property
    def style_map(self) -> str | None:
        """The style layer whose style map (how far each part of the picture is from the style) the runs send and
        the picture shows; None: no style map."""
        return self._style_map

    @property
    def regions(self) -> Regions | None:
        """The regions painted over the photo, as their editor holds them (its strokes change the masks in place;
        ``regions_for_run`` takes a copy)."""
        return self._regions

    def regions_for_run(self, *, painted_only: bool = True) -> Regions | None:
        """A copy of the regions for a run or a file (None: none); a region not painted yet is left out."""
        return regions_for_run(self._regions, painted_only=painted_only)

    @property
    def brush(self) -> Brush:
        """How the regions are painted: the brush's size and soft edge, and whether it erases."""
        return self._brush

    @property
    def selected_region(self) -> int:
        """The index of the region being painted (-1: none)."""
        return self._selected_region

    @property
    def picture_run(self) -> RunStatus:
        """The still run under way (the user's or the queue's)."""
        return self._picture_run

    @property
    def video_run(self) -> RunStatus:
        return self._video_run

    @property
    def exporting(self) -> bool:
        return self._exporting

    # -- what can be done ------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """A photo and at least one style are in."""
        return self._photo is not None and bool(self._styles)

    @property
    def can_start(self) -> bool:
        """Start: the pictures are in and no video renders (a stopping run hands over to the next)."""
        return self.ready and self._picture_run is not RunStatus.RUNNING and self._video_run is RunStatus.IDLE

    @property
    def can_stop(self) -> bool:
        return self._picture_run is RunStatus.RUNNING or self._video_run is not RunStatus.IDLE

    @property
    def can_export(self) -> bool:
        """Export: a picture is shown (a video's entry is written already) and no export is under way."""
        return self._shown is not None and self._shown.video is None and not self._exporting

    @property
    def can_render_video(self) -> bool:
        """Render video: the photo is a video's frame and no video renders."""
        return self._photo is not None and self._photo.clip is not None and self._video_run is RunStatus.IDLE

    @property
    def can_play(self) -> bool:
        """Play: the photo is a video's frame and no video renders (its previews have the picture area)."""
        return self.can_render_video

    # -- changes ---------------------------------------------------------------------------

    def set_photo(self, photo: InputImage | None) -> None:
        """A new photo; the result shown was made from the old one, so the photo is shown instead."""
        if photo is self._photo:
            return
        self._photo = photo
        self._shown = None
        self.shown_changed.emit(None)  # first: the photo's listeners may show something of their own over it
        self.photo_changed.emit(photo)
        self.commands_changed.emit()

    def set_styles(self, styles: tuple[InputImage, ...]) -> None:
        if len(styles) == len(self._styles) and all(a is b for a, b in zip(styles, self._styles, strict=True)):
            return  # the same pictures (compared as objects: comparing pixels would read every one)
        self._styles = tuple(styles)
        self.styles_changed.emit(self._styles)
        self.commands_changed.emit()

    def set_mask(self, mask: Path | None) -> None:
        """The regions were loaded from ``mask`` (None: they are gone, or not from a file)."""
        if mask != self._mask:
            self._mask = mask
            self.mask_changed.emit(mask)

    def show(self, entry: HistoryEntry | None) -> None:
        """Show a result (a finished run's, a history entry) in the picture area; None shows the photo."""
        self._shown = entry
        self.shown_changed.emit(entry)
        self.commands_changed.emit()

    def set_print_dpi(self, dpi: int) -> None:
        if dpi != self._print_dpi:
            self._print_dpi = dpi
            self.print_dpi_changed.emit(dpi)

    def set_video(self, name: str, value: Any) -> None:
        """Take a new value of one of the video's options; emits only when it changed."""
        before, self._video = self._video, _with_field(self._video, name, value)
        if self._video is not before:
            self.video_changed.emit(name, value)

    def load_video(self, options: VideoOptions) -> None:
        """Take all the video's options (those kept from the last session); emits each that changed."""
        before, self._video = self._video, options
        _emit_changes(before, options, self.video_changed)

    def set_style_map(self, layer: str | None) -> None:
        if layer != self._style_map:
            self._style_map = layer
            self.style_map_changed.emit(layer)

    def set_regions(self, regions: Regions | None) -> None:
        """The regions' editor changed them (it keeps their undo)."""
        self._regions = regions
        self.regions_changed.emit()

    def set_brush(self, name: str, value: Any) -> None:
        """Take a new value of one of the brush's fields; emits only when it changed."""
        before, self._brush = self._brush, _with_field(self._brush, name, value)
        if self._brush is not before:
            self.brush_changed.emit(name, value)

    def select_region(self, index: int) -> None:
        """Paint region ``index`` (-1: none); the regions' editor says which exist."""
        if index != self._selected_region:
            self._selected_region = index
            self.region_selected.emit(index)

    def set_picture_run(self, status: RunStatus) -> None:
        self._put("_picture_run", status)

    def set_video_run(self, status: RunStatus) -> None:
        self._put("_video_run", status)

    def set_exporting(self, exporting: bool) -> None:
        self._put("_exporting", exporting)

    def _put(self, attribute: str, value: object) -> None:
        if getattr(self, attribute) != value:
            setattr(self, attribute, value)
            self.commands_changed.emit()
