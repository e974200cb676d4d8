"""Changes made while a run goes on: one inbox the window posts to and the loop takes from once per iteration.

The window's thread posts, the run's thread takes; one lock guards both.
Only the fields that changed travel: a slider moved three times before the
next iteration arrives as its last value.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

from ..errors import SettingsError
from ..objective.regions import Regions
from ..settings import LIVE_FIELDS, Settings, from_dict, to_dict


class LiveChanges:
    """Loss weights, regions and the style map's layer, changed during a run.

    Args:
        settings: the run's settings (live changes are checked against them).
        style_count: the run's number of style pictures.
        size: the photo's (width, height), for "no regions" painted during a run.
    """

    def __init__(self, settings: Settings, style_count: int, size: tuple[int, int]) -> None:
        self._base = settings
        self._style_count = style_count
        self._size = size
        self._lock = threading.Lock()
        self._fields: dict[str, Any] = {}
        self._regions: Regions | None = None
        #: The layer whose style map goes with each preview (None: none); one reference, read once per iteration.
        self.style_map_layer: str | None = None

    def change(self, fields: Mapping[str, Any]) -> None:
        """Take new values of live fields (``settings.LIVE_FIELDS``) at the next iteration.

        Raises:
            SettingsError: a field is not live or a value is invalid (nothing is changed).
        """
        fields = dict(fields)
        unknown = sorted(set(fields) - set(LIVE_FIELDS))
        if unknown:
            raise SettingsError(f"only {', '.join(LIVE_FIELDS)} change during a run, not {', '.join(unknown)}")
        with self._lock:
            merged = {**self._fields, **fields}
        changed = dataclasses.replace(self._base, **merged)
        # As the window and the presets give them: the same checks, layer order and types.
        changed = from_dict({name: to_dict(changed)[name] for name in merged}, base=self._base)
        changed.blend_weights(self._style_count)  # raises on a count mismatch
        with self._lock:
            self._fields.update({name: getattr(changed, name) for name in fields})

    def change_settings(self, settings: Settings) -> None:
        """Take the live fields of ``settings`` that differ from the run's at the next iteration."""
        self.change({name: getattr(settings, name) for name in LIVE_FIELDS})

    def paint(self, regions: Regions | None) -> None:
        """Take new regions at the next iteration; None or empty: no regions.

        Raises:
            RegionError: the regions cannot be used (nothing is changed).
        """
        if regions:
            regions.check(self._style_count)
        with self._lock:
            self._regions = regions or Regions.empty(*self._size)

    def take_settings(self, current: Settings) -> Settings | None:
        """``current`` with the fields changed since the last take; None when none changed."""
        with self._lock:
            fields, self._fields = self._fields, {}
        if not fields:
            return None
        self._base = dataclasses.replace(current, **fields)
        return self._base

    def take_regions(self) -> Regions | None:
        """The regions painted since the last take (empty ones: the regions were cleared); None when none were."""
        with self._lock:
            regions, self._regions = self._regions, None
        return regions
