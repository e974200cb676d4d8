"""Style Studio: neural style transfer on the desktop."""

from __future__ import annotations

__version__ = "0.1.0"
APP_NAME = "Style Studio"
APP_ID = "org.stylestudio.StyleStudio"
