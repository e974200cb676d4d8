"""The settings that were the defaults before the Gaussian style measure: keys and files made then stay valid."""

from __future__ import annotations

import dataclasses

from style_studio.core.settings import DEFAULTS, Settings

#: The fields the new defaults changed, at the values they had before.
FORMER_FIELDS = {"style_loss": "gram", "init": "content", "first_scale": 0, "iterations": 300}

FORMER_DEFAULTS: Settings = dataclasses.replace(DEFAULTS, **FORMER_FIELDS)

#: The video options' former default frame iterations (before the Gaussian style measure made 30 enough).
FORMER_FRAME_ITERATIONS = 60
