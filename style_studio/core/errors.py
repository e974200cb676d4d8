"""Errors the core raises, each with a message a user can act on.

The command line prints ``str(error)`` as its one line on stderr and exits
with status 2; the window shows the same text in a message.
"""

from __future__ import annotations


class StyleStudioError(Exception):
    """Base class: something the user can fix (a file, a setting, a choice)."""


class ImageLoadError(StyleStudioError):
    """An input image cannot be used. The message names the file and the reason."""


class ImageSaveError(StyleStudioError):
    """An export failed. Any file that was already at the target path is untouched."""


class OutputError(StyleStudioError):
    """An output that must not be written there: it is an input, it leads outside its folder, it would replace
    what this job did not make. Nothing was written."""


class UnsafePathError(StyleStudioError, ValueError):
    """A name or path that would lead outside the folder it belongs in; refused before anything is touched."""


class SettingsError(StyleStudioError):
    """Settings, a preset or embedded metadata are invalid. Nothing was applied."""

    def __init__(self, problems: list[str] | str, source: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(self.problems))


class WeightsError(StyleStudioError):
    """The VGG19 weights are missing, corrupt or could not be downloaded."""


class InstantLookUnavailable(StyleStudioError):
    """The instant look's network is not installed, or its files are not the known ones."""


class ResourceError(StyleStudioError):
    """A run needs more memory than the device has."""


class Cancelled(Exception):
    """Raised inside the optimisation when the cancel token is set."""
