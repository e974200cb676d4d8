"""The settings that were the defaults before the Gaussian style measure (and the colour term): keys and files made
then stay valid."""

from __future__ import annotations

import dataclasses

from style_studio.core.settings import DEFAULTS, Settings

#: The fields the new defaults changed, at the values they had before.
FORMER_FIELDS = {"style_loss": "gram", "init": "content", "first_scale": 0, "iterations": 300, "colour_weight": 0.0}

FORMER_DEFAULTS: Settings = dataclasses.replace(DEFAULTS, **FORMER_FIELDS)

#: The video options' former defaults: 60 frame iterations (before the Gaussian style measure made 30 enough),
#: every one of them run (before frames stopped once settled).
FORMER_VIDEO_FIELDS = {"frame_iterations": 60, "frame_settle": 0.0}
