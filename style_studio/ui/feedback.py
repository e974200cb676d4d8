"""How a part of the window tells the user something, without holding the window."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Feedback:
    """The window's banner and status bar, as three calls.

    Attributes:
        info: a message in the banner (and the status bar).
        error: an error in the banner (and the status bar).
        status: a line in the status bar for ``ms`` milliseconds (0: until the next); "" clears it.
    """

    info: Callable[[str], None]
    error: Callable[[str], None]
    status: Callable[[str, int], None]
