"""The instant look in the picture area before Start: once a photo and a style are in, a network paints it at once.

The look is the run of no iterations with the instant start (``--preset instant``), made by the same
``door.picture`` as every run, in a thread of its own: it needs no VGG19 weights, so a new user sees a
painted picture while the ImageNet weights are still to be downloaded. A new photo, a style, a blend,
the size or "keep colours" paints it again and shows it in place of the picture shown (which stays in the
history); while a run or a video is under way, nothing is painted.
The look is shown as a result that is not yet in the history; exporting it keeps it there
(``FileCommands.export_to``).

Where the look tuned to the paintings under the settings shown is kept (Run → Tune the look, or a run with the
tuned start), the look is painted with it (the tuned start, ``core.kept_look``): read, never tuned here, and said
so (``TUNED_LOOK_NOTE``). The Tune action's own picture is shown as the look when it ends (``adopt``).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Final

from PySide6.QtCore import QObject, Signal

from ..core import FINISHED, Failed, InstantLookUnavailable, Pictures, StyleStudioError
from ..core import settings as settings_mod
from .background import BackgroundTask, TaskOutcome
from .pictures import HistoryEntry
from .state import RunStatus

if TYPE_CHECKING:
    from PIL import Image

    from ..core import CancelToken, NetworkWeights, PictureResult, Settings, WeightsCache
    from .background import Report
    from .state import WindowState

log = logging.getLogger(__name__)

#: The settings the look depends on besides the pictures (the others shape only the optimisation): the instant
#: look's, and those a tuned look is tuned under (which of the kept ones is painted).
LOOK_SETTINGS: Final = tuple(dict.fromkeys(("style_blend", "preserve_colors", "size", *settings_mod.TUNING_FIELDS)))
#: What the picture area's look is called where the user reads it.
LOOK_NAME: Final = "Instant look"
#: What the run bar says while the look is shown.
INSTANT_LOOK_NOTE: Final = f"{LOOK_NAME} · Start paints the picture"
#: The look tuned to the painting, as the user reads it, and what the run bar says while it is shown.
TUNED_LOOK_NAME: Final = "Tuned look"
TUNED_LOOK_NOTE: Final = f"{TUNED_LOOK_NAME} — tuned to this painting · Start paints the picture"


def look_settings(settings: Settings) -> Settings:
    """The settings of the look of a picture with ``settings``: the instant start, no iterations."""
    return dataclasses.replace(settings, init="instant", iterations=0)


def tuned_settings(settings: Settings) -> Settings:
    """The settings of the look tuned to the painting with ``settings``: the tuned start alone (preset "tuned");
    the settings it is tuned under stay the user's."""
    return dataclasses.replace(settings, **settings_mod.PRESETS["tuned"])


def look_note(entry: HistoryEntry) -> str:
    """What the run bar says while the look ``entry`` is shown: the tuned look's note, or the instant look's."""
    return TUNED_LOOK_NOTE if entry.settings.tunes else INSTANT_LOOK_NOTE


class InstantPreview(QObject):
    """Paints the instant look whenever what it shows changes, and shows it when nothing else is under way.

    Args:
        weights: where the runs get their weights; a tuned look is named by them (None: the instant look only).

    Signals:
        shown(object): a look was shown (its ``HistoryEntry``).
        unavailable(str): the network cannot be had here (said once): why, and how to get it.
    """

    shown = Signal(object)
    unavailable = Signal(str)

    def __init__(
        self, state: WindowState, parent: QObject | None = None, *, weights: WeightsCache | None = None
    ) -> None:
        super().__init__(parent)
        self.state = state
        self._weights = weights
        self._task: BackgroundTask[None, PictureResult] | None = None
        self._wanted = 0  # bumped by every change of what the look shows; a look of an older one is dropped
        self._painting = 0  # the change the task under way paints
        self._missing: str | None = None  # why the network cannot be had: then nothing is tried again
        #: The look shown, or the last one made (None until one is).
        self.look: HistoryEntry | None = None
        state.photo_changed.connect(self._changed)
        state.styles_changed.connect(self._changed)
        state.setting_changed.connect(self._setting_changed)

    def is_look(self, entry: HistoryEntry | None) -> bool:
        """Whether ``entry`` is the look this made (shown, not yet in the history)."""
        return entry is not None and entry is self.look

    @property
    def busy(self) -> bool:
        return self._task is not None

    def _setting_changed(self, name: str, _value: object) -> None:
        if name in LOOK_SETTINGS:
            self._changed()

    def _changed(self, *_: object) -> None:
        self._wanted += 1
        self.paint()

    def _free(self) -> bool:
        """Whether the picture area may show a look: the pictures are in and no run or video is under way.

        What it showed was made of other pictures or settings (those the look follows changed): the look of the
        new ones takes its place, and the picture that was shown stays in the history."""
        state = self.state
        return state.ready and state.picture_run is RunStatus.IDLE and state.video_run is RunStatus.IDLE

    def paint(self) -> None:
        """Paint the look of what is shown now, in the background (after the one under way, when there is one)."""
        if self._missing is not None or self._task is not None or not self._free():
            return
        photo, styles = self.state.photo, self.state.styles
        assert photo is not None
        try:
            settings = look_settings(self.state.settings).validate()
            tuned = tuned_settings(self.state.settings).validate()
        except Exception:  # a setting half-typed: the look waits for a valid one
            return
        pictures = Pictures(
            photo.image, tuple(s.image for s in styles), (photo.name, *(s.name for s in styles)), None,
            self.state.input_files(),
        )  # fmt: skip
        weights = self._weights

        def work(_report: Report[None], cancel: CancelToken) -> PictureResult:
            from ..core import RunHooks, RunSpec, door, load_weights  # here: the window shows before torch

            network = _tuned_through(tuned, pictures.styles, weights) if weights is not None else None
            if network is not None:  # kept: the run reads it and tunes nothing
                return door.picture(RunSpec(pictures, tuned), network, RunHooks(cancel=cancel))
            return door.picture(
                RunSpec(pictures, settings), load_weights(settings.network_weights), RunHooks(cancel=cancel)
            )

        self._painting = self._wanted
        self._task = BackgroundTask(work, "style-studio-instant-look", failure="the instant look failed")
        self._task.on_end(self._painted)
        self._task.start()

    def _painted(self, outcome: TaskOutcome[PictureResult]) -> None:
        self._task = None
        result = outcome.value
        if (
            result is not None
            and isinstance(result.outcome, Failed)
            and isinstance(missing := result.outcome.exception, InstantLookUnavailable)
        ):
            self._missing = str(missing)
            self.unavailable.emit(f"{LOOK_NAME} unavailable: {self._missing}. Start paints the picture as usual.")
            return
        if self._painting != self._wanted:  # what it shows changed while it painted
            self.paint()
            return
        if result is None or result.image is None or not self._free():
            problem = outcome.error or (result.error if result is not None else None)
            if problem:  # said by the run, if the user starts one; the photo stays shown
                log.warning("the instant look: %s", problem)
            return
        self._show(result)

    def adopt(self, result: PictureResult) -> bool:
        """Show a tuning's picture (Run → Tune the look) as the look, when it is of the pictures and settings
        shown: their look is now the tuned one. False, and nothing shown, when it is not (they changed while it
        tuned, or it made no picture)."""
        photo, styles = self.state.photo, self.state.styles
        if result.image is None or photo is None or not result.settings.tunes:
            return False
        shown = (photo.image, *(style.image for style in styles))
        made = (result.pictures.content, *result.pictures.styles)
        if len(shown) != len(made) or any(a is not b for a, b in zip(shown, made, strict=True)):
            return False
        try:
            now = tuned_settings(self.state.settings).validate()
        except Exception:  # a setting half-typed: not the settings it tuned under
            return False
        if any(getattr(now, name) != getattr(result.settings, name) for name in LOOK_SETTINGS):
            return False
        self._show(result)
        return True

    def start_settings(self, settings: Settings) -> Settings:
        """The settings Start runs with: going on from the look shown (its start, instant or tuned) when
        ``settings`` start from the photo in the painting's colours (the default) or the instant look and
        optimise; as they are otherwise (a start the user chose, or no look of these pictures shown).

        So the first preview after Start is the look the user saw, at the run's size (the engine shows it first).
        """
        look = self.look
        if (
            look is None
            or not settings.optimises
            or settings.init not in ("palette", "instant")
            or self._task is not None
            or self._painting != self._wanted
            or not self._free()
        ):
            return settings
        return dataclasses.replace(settings, init=look.settings.init)

    def _show(self, result: PictureResult) -> None:
        assert result.image is not None
        name = TUNED_LOOK_NAME if result.settings.tunes else LOOK_NAME
        self.look = HistoryEntry(
            result.image, result.settings, f"{name} ({result.weights_label})", FINISHED,
            key=result.key, inputs=result.pictures.files,
        )  # fmt: skip
        self.state.show(self.look)
        self.shown.emit(self.look)

    def wait(self) -> None:
        """Let the look under way come to its end (the window closes)."""
        if self._task is not None:
            self._task.cancel()
            self._task.wait()


def _tuned_through(settings: Settings, styles: tuple[Image.Image, ...], weights: WeightsCache) -> NetworkWeights | None:
    """The weights the look tuned to ``styles`` under ``settings`` (the tuned start) was tuned through, where that
    look is kept whole; None where it is not (then no weights are loaded when no look at all is kept)."""
    from ..core import TunedLooks, kept_look, missing_weights  # here: the window shows before torch

    if not TunedLooks().any_kept() or missing_weights(settings.network_weights) is not None:
        return None
    try:
        network = weights.get(settings.network_weights)
    except StyleStudioError as exc:  # said by the run, if the user starts one
        log.warning("the tuned look: %s", exc)
        return None
    return network if kept_look(settings, styles, network.label) is not None else None
