"""Reading what Style Studio kept on disk: the one place a kept file is read, and set aside when it cannot be.

Checkpoints, a video's kept frames, a chunked render's chunks, the history's
results and the render queue are each read through ``read_kept``. Whatever
goes wrong reading or parsing one (cut short, empty, a byte flipped, a shape
another version wrote, a file where a folder was), the reader's exception is
caught here: the file is moved out of the way (``files.set_aside``), never
deleted, a line says where it is kept, and the caller goes on without it
(a frame or a chunk is styled again, a run starts afresh). Only what a reader
says must be left alone (``LeftAlone``: a newer version's) is passed on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..errors import StyleStudioError
from .files import set_aside

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Hears what the user should be told: a kept file that could not be read, and where it is now.
Tell = Callable[[str], None]


class LeftAlone(StyleStudioError):
    """A kept file this version must neither use nor move (a newer version wrote it): ``read_kept`` passes it on."""


@dataclass(frozen=True)
class Unreadable:
    """A kept file that could not be read: what it is, why, and where it is kept now (None: it could not be moved).

    Attributes:
        what: what the file was, for the user ("the kept frame 12 of a video").
        path: where it was.
        problem: why it could not be read.
        kept: where it is now; None when it could not be moved (it stays at ``path``).
        refusal: why it could not be moved, when it could not.
    """

    what: str
    path: Path
    problem: str
    kept: Path | None
    refusal: str = ""

    def __str__(self) -> str:
        if self.kept is None:
            return (
                f"{self.what} in {self.path} could not be read ({self.problem}) nor moved aside ({self.refusal}); "
                "it is left where it is"
            )
        return f"{self.what} could not be read ({self.problem}) and was moved to {self.kept}"


def put_aside(path: Path, problem: str, what: str, into: Path | None = None, prefix: str = "") -> Unreadable:
    """Move a kept file or folder that cannot be used out of the way (into ``into``, else beside it), never deleting
    it; says where, and logs it."""
    try:
        kept: Path | None = set_aside(path, into, prefix)
        refusal = ""
    except OSError as exc:
        kept, refusal = None, exc.strerror or str(exc)
    unreadable = Unreadable(what, path, problem, kept, refusal)
    log.warning("%s", unreadable)
    return unreadable


def read_kept(
    path: Path,
    read: Callable[[Path], T],
    what: str,
    *,
    tell: Tell | None = None,
    into: Path | None = None,
    prefix: str = "",
) -> T | None:
    """``read(path)``: what a kept file (or folder) holds; None when there is none, or it could not be read.

    A reader checks what it reads (its format, its keys, the shapes it expects) and raises whatever it meets.
    Any exception but ``LeftAlone`` means the file cannot be used: it is set aside (``put_aside``: into
    ``into``, named with ``prefix``, else beside it) and ``tell`` hears where it is kept.

    Raises:
        LeftAlone: the reader said the file must be left as it is.
    """
    if not os.path.lexists(path):
        return None
    try:
        return read(path)
    except LeftAlone:
        raise
    except Exception as exc:  # any failure to read or parse: a damaged file, whatever the library raised
        unreadable = put_aside(path, _reason(exc), what, into, prefix)
        if tell is not None:
            tell(str(unreadable))
        return None


def _reason(exc: BaseException) -> str:
    """The exception's first line, with its type when it is not one of ours (``BadZipFile: File is not a zip``)."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    if isinstance(exc, StyleStudioError) and first:
        return first
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
