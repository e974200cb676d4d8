"""Errors the core raises, each with a message a user can act on.

The command line prints ``str(error)`` as its one line on stderr and exits
with status 2; the window shows the same text in a message.
"""

from __future__ import annotations

from typing import Final

#: The longest error line: a hostile file's 2 MB key or value is cut, with what the line is about left readable.
MAX_MESSAGE: Final = 400


def short_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` in at most ``limit`` characters: the middle of a longer line gives way to "…" (its start says what
    is wrong, its end often what to do)."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + " … " + text[len(text) - (limit - head - 3) :]


def short_lines(text: str) -> str:
    """Each line of ``text`` cut to ``MAX_MESSAGE`` characters (``short_line``)."""
    return "\n".join(short_line(line) for line in text.split("\n"))


class StyleStudioError(Exception):
    """Base class: something the user can fix (a file, a setting, a choice). Each line of its message is short
    (``short_lines``), whatever names or values it quotes: every surface shows it as it is."""

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            args = (short_lines(args[0]),)
        super().__init__(*args)


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
        told: list[str] = []
        left = MAX_MESSAGE - len(where)
        for problem in self.problems:  # whole problems while they fit, then how many more
            if told and len(problem) + 2 > left - 20:
                break
            told.append(problem)
            left -= len(problem) + 2
        more = len(self.problems) - len(told)
        super().__init__(where + "; ".join(told) + (f"; and {more} more" if more else ""))


class WeightsError(StyleStudioError):
    """The VGG19 weights are missing, corrupt or could not be downloaded."""


class InstantLookUnavailable(StyleStudioError):
    """The instant look's network is not installed, or its files are not the known ones."""


class ResourceError(StyleStudioError):
    """A run needs more memory than the device has."""


class Cancelled(Exception):
    """Raised inside the optimisation when the cancel token is set."""
