"""Changes made while a run goes on: one inbox the window posts to and the loop takes from once per iteration.

The window's thread posts, the run's thread takes; one lock guards both.
Only the fields that changed travel: a slider moved three times before the
next iteration arrives as its last value.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..errors import SettingsError
from ..objective.guided import ScaleRegions
from ..objective.objective import Objective
from ..objective.regions import Regions
from ..settings import LIVE_FIELDS, Settings, from_dict, to_dict

#: A live change that scales a loss term's factor by more than this (either
#: way) restarts the optimiser: L-BFGS's curvature pairs describe the old
#: objective and overshoot on the new one. Smaller changes, such as the steps
#: of a dragged slider, keep the history: a restart begins with a tiny step,
#: and the picture would stand still for as long as the drag lasts.
RESTART_RATIO: Final = 2.0


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

    @property
    def waiting(self) -> bool:
        """Whether a change waits to be taken."""
        with self._lock:
            return bool(self._fields) or self._regions is not None

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


class Steering:
    """What a run is steered by as it goes: its settings and regions, its own until live changes replace them.

    Args:
        live: the run's inbox of changes.
        settings, regions: the run's own (regions None: one style everywhere).
    """

    def __init__(self, live: LiveChanges, settings: Settings, regions: Regions | None) -> None:
        self.live, self.settings, self.regions = live, settings, regions

    def reweighed(self) -> bool:
        """Take the loss weights changed since the last take into ``settings``; whether any were."""
        changed = self.live.take_settings(self.settings)
        if changed is None:
            return False
        self.settings = changed
        return True

    def repainted(self) -> bool:
        """Take the regions painted since the last take into ``regions`` (None when cleared); whether any were."""
        painted = self.live.take_regions()
        if painted is None:
            return False
        self.regions = painted or None
        return True


def reweighted(objective: Objective, settings: Settings, rebuilt: Callable[[], Objective]) -> tuple[Objective, bool]:
    """The objective under new loss weights; its hooks and targets are rebuilt (``rebuilt``) only when the style
    layers change. Also whether the optimiser must restart: a layer came or went, or a term's factor moved by
    more than RESTART_RATIO."""
    if tuple(settings.active_style_layers) == objective.style_layers:
        return objective, objective.reweight(settings) > RESTART_RATIO
    objective.close()
    return rebuilt(), True


def repainted(
    objective: Objective, regions: ScaleRegions, settings: Settings, rebuilt: Callable[[], Objective]
) -> Objective:
    """The objective with regions painted during a run: regrouped in place, or ``rebuilt`` when it cannot be."""
    if objective.regroup(regions, settings):
        return objective
    objective.close()
    return rebuilt()
