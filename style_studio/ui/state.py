"""The window's settings as a Qt-free model with change events: widgets write one field, listeners get that field.

In the manner of napari's evented models (with psygnal, napari's signals
without Qt): a widget writes the one setting it shows (``set``); the state
emits ``setting_changed(name, value)`` for that field only; the controls show
it, the run under way takes it when it is live, and the plan is made again
only when it shapes the plan (``PLANNED``). Nothing rebuilds ``Settings`` from
the widgets. Loading a whole settings document (a preset, Reset, a restored
picture) emits each field that changed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from psygnal import Signal

from ..core import Settings
from ..core import settings as settings_mod

#: Settings that change only the loss's weights: moving them leaves the run's plan (scales, memory, time) as it is.
UNPLANNED: Final = ("content_weight", "style_weight", "tv_weight", "style_blend")


def shapes_the_plan(name: str) -> bool:
    """Whether a change of setting ``name`` needs the run's plan made again."""
    return name not in UNPLANNED


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
        if getattr(self._settings, name) == value:
            return
        self._settings = dataclasses.replace(self._settings, **{name: value})
        self.setting_changed.emit(name, value)

    def load(self, settings: Settings) -> None:
        """Take a whole settings document; emits each setting that changed, in the fields' order."""
        before, self._settings = self._settings, settings
        for field in dataclasses.fields(Settings):
            value = getattr(settings, field.name)
            if getattr(before, field.name) != value:
                self.setting_changed.emit(field.name, value)
