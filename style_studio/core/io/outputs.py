"""The one way Style Studio writes an output, and the rules every output keeps.

A picture, a 16-bit picture, an export from the window, a queue's or a
batch's result, a video, a GIF and a folder of frames are all written through
an ``Output`` (a folder of frames through a ``FrameFolder`` over one), so
that a new kind of output cannot forget a rule:

- **An output is never an input.** It may not be, or lead to, one of its
  job's inputs: after links and ``..``, and by the file's identity (a hard
  link, another case of the name on a file system that ignores case).
- **It stays where it is meant to go.** An output that must lie inside a
  folder (a batch's ``-o``) is checked again at the moment it is written,
  so a link planted while the batch runs is not followed out of it.
- **Nothing is removed or replaced that this job did not make.** A file
  output replaces a file, never a folder, and never a read-only file; a name
  Style Studio made up (a batch's, the queue's) replaces only a file that
  carries a job key (``replaceable``), never a user's own. A folder of frames
  is written only where it is new, empty, or holds frames this same job wrote
  there before (each frame carries its job's key), never through a link.
  Nothing else in a folder is ever touched.
- **Atomic** (``files.replacing``): a reader never sees half a file; an
  existing file keeps its permissions, a link stays a link, the folder is
  synced, and a killed writer's temporary is swept by the next process that
  writes there.
- **Locked by the output**: two processes never write the same output at once.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

import numpy as np
from PIL import Image, PngImagePlugin

from ..errors import OutputError
from .files import (
    TEMPORARY,
    UMASK,
    cache_folder,
    path_key,
    remove_tree,
    replacing,
    sync_folder,
    temporary_beside,
    writable_by_user,
    write_atomically,
)
from .locks import held

#: The PNG text entry that marks a frame as written by a job: its value is the job's key.
FRAME_MARK: Final = "style-studio-frame-of"
_FRAME_NAME: Final = re.compile(r"frame-(\d{6,})\.png")


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same real path, or (both existing) the same file on disk."""
    try:
        if os.path.samefile(a, b):
            return True
    except (OSError, ValueError):
        pass
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


class FileIndex:
    """``same_file`` against many files at once (a batch's inputs): indexed by real path and by file identity."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.by_path: dict[str, Path] = {}
        self.by_identity: dict[tuple[int, int], Path] = {}
        for path in paths:
            self.by_path.setdefault(os.path.normcase(os.path.realpath(path)), path)
            with contextlib.suppress(OSError):
                info = os.stat(path)
                self.by_identity.setdefault((info.st_dev, info.st_ino), path)

    def find(self, path: Path) -> Path | None:
        found = self.by_path.get(os.path.normcase(os.path.realpath(path)))
        if found is None:
            with contextlib.suppress(OSError):
                info = os.stat(path)
                found = self.by_identity.get((info.st_dev, info.st_ino))
        return found


def names_a_folder(text: str) -> bool:
    """Whether an output the user typed (``-o``, a jobs file's) ends with a path separator: they meant a folder,
    whatever the name's ending. ``Path`` drops the separator, so this reads the text."""
    return text.endswith(("/", os.sep))


def file_name_problem(text: str) -> str | None:
    """Why a picture's output typed as ``text`` is refused: it ends with a separator, so it names a folder, and a
    picture is one file (``render -o new.png/``); None: it is not. ``render`` and ``Stylized.save`` say it."""
    if not names_a_folder(text):
        return None
    return (
        f"{text}: ends with '{text[-1]}', so it names a folder, and a picture is one file: give its file name "
        f"({text.rstrip(text[-1])}, or a name inside that folder)"
    )


def frames_name_problem(text: str) -> str | None:
    """Why a video's output typed as ``text`` is refused: it ends with a separator, so it names a folder of frames,
    but its name ends as a video file's does (``new.gif/``); None: it is not. ``video -o`` and the door say it."""
    named = Path(text)
    if not (names_a_folder(text) and named.suffix):
        return None
    return (
        f"{text}: names a folder of frames, but its name ends in '{named.suffix}', as a video file's does: name the "
        f"folder without an ending ({named.stem}-frames/), or drop the '{text[-1]}' for a file"
    )


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (a real path) lies in ``folder`` (a real path) or below it."""
    inner, outer = os.path.normcase(str(path)), os.path.normcase(str(folder)).rstrip(os.sep)
    return inner.startswith(outer + os.sep)


@dataclass(frozen=True)
class Output:
    """Where one job's result goes, and what it must never touch.

    Attributes:
        path: the file (or folder of frames) to write.
        inputs: the job's inputs (photo or clip, styles, mask): the output may be none of them.
        within: a folder the output must stay inside (a batch's output folder), or None.
        replaceable: for a name Style Studio made up, which existing file it may replace (one a job of ours
            wrote); None: the user named the file, and it is replaced when the user may write it.
    """

    path: Path
    inputs: tuple[Path, ...] = ()
    within: Path | None = None
    replaceable: Callable[[Path], bool] | None = None

    def same_as_input(self) -> Path | None:
        """The input this output is (the same file, by any name), or None."""
        return next((source for source in self.inputs if same_file(self.path, source)), None)

    def input_problems(self, folder: bool = False) -> list[str]:
        """Whether the output is, or (a folder) holds, one of its inputs, said for the user; empty: it is none."""
        source = self.same_as_input()
        if source is not None:
            return [f"{self.path} is one of the job's inputs ({source.name}); choose another output"]
        real = Path(os.path.realpath(self.path))
        for source in self.inputs:
            if folder and _inside(Path(os.path.realpath(source)), real):
                return [f"{self.path} holds the job's input {source.name}; choose another folder for the frames"]
        return []

    def problems(self, folder: bool = False) -> list[str]:
        """What forbids writing this output, said for the user; empty: nothing. ``folder``: a folder of frames."""
        found = self.input_problems(folder)
        real = Path(os.path.realpath(self.path))
        if self.within is not None:
            home = Path(os.path.realpath(self.within))
            if not _inside(real, home):
                found.append(f"{self.path} leads outside the output folder {self.within}; it is not written")
        try:
            kind = os.stat(self.path).st_mode if not folder else None
        except FileNotFoundError:
            kind = None
        except (OSError, ValueError) as exc:  # a name too long, a NUL in it, a folder that is a file, ...
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return [*found, f"{self.path}: cannot be written there ({reason})"]
        if kind is not None and stat.S_ISDIR(kind):
            found.append(f"{self.path} is a folder; give a file name")
        elif kind is not None and stat.S_ISREG(kind):
            if not writable_by_user(self.path):
                found.append(f"{self.path} is read-only; it is not replaced (make it writable, or choose another name)")
            elif self.replaceable is not None and not self.replaceable(self.path):
                found.append(
                    f"{self.path} exists and was not made by Style Studio; it is not replaced (a name Style Studio "
                    "chose replaces only its own pictures)"
                )
        return found

    def check(self, folder: bool = False) -> None:
        """Raise OutputError with the first problem (``problems``); nothing when the output may be written."""
        problems = self.problems(folder)
        if problems:
            raise OutputError(problems[0])

    def claim(self) -> contextlib.AbstractContextManager[None]:
        """Hold this output for this process while the block runs (Busy: another process is writing it)."""
        key = hashlib.sha256(path_key(self.path).encode()).hexdigest()[:16]
        return held(
            cache_folder() / "locks" / f"output-{key}.lock",
            f"{self.path} is being written by another Style Studio process; wait for it, or choose another output",
        )

    @contextlib.contextmanager
    def replacing(self) -> Iterator[Path]:
        """A temporary file for an encoder that needs a file name; in the output's place when the block ends well.

        Raises:
            OutputError: the output may not be written (checked before and again just before it is put in place).
            Busy: another process is writing it.
            OSError: the folder is missing or read-only, the disk is full, ... (nothing is left behind).
        """
        self.check()
        with self.claim(), replacing(self.path, self.check) as part:
            yield part

    def write(self, write: Callable[[BinaryIO], None]) -> None:
        """Call ``write`` on a file that becomes the output when it returns (``replacing``'s rules and errors)."""
        with self.replacing() as part, open(part, "wb") as out:
            write(out)

    def write_bytes(self, data: bytes) -> None:
        """``write`` of ``data``."""
        with self.replacing() as part, open(part, "wb") as out:
            out.write(data)

    def remove(self) -> None:
        """Remove this output, a file the job made and no longer wants (a preview past a checkpoint): with the same
        checks as a write (never an input, never outside ``within``), and never a link or a folder.

        Raises:
            OutputError: ``problems``, or it is a link.
            OSError: it cannot be removed (read-only folder, ...); a file already gone is no error.
        """
        self.check()
        if self.path.is_symlink():
            raise OutputError(f"{self.path} is a link (to {os.path.realpath(self.path)}); it is not removed")
        self.path.unlink(missing_ok=True)

    def append_line(self, line: str) -> None:
        """Add ``line`` (one line of text) at the output's end, made when missing: a log kept beside a run's files.

        Written in one call, so that a process killed between two lines leaves whole lines behind.

        Raises:
            OutputError: ``problems``, or the output is a link (it is never followed).
            OSError: the folder is missing or read-only, the disk is full, ...
        """
        self.check()
        if self.path.is_symlink():
            raise OutputError(f"{self.path} is a link (to {os.path.realpath(self.path)}); it is not written through")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(self.path, flags, 0o666)
        try:
            os.write(descriptor, (line.rstrip("\n") + "\n").encode())
        finally:
            os.close(descriptor)


class FrameFolder:
    """A folder of numbered PNG frames (``frame-000001.png``, ...) as one job's output.

    Each frame carries its job's key in a PNG text entry (``FRAME_MARK``): the
    folder is written only where it is new, empty, or holds nothing but frames
    marked with this same job's key; then those frames are replaced, and those
    of them the new render no longer has are removed. Nothing else is touched.
    """

    def __init__(self, output: Output, key: str) -> None:
        self.output, self.key = output, key

    @property
    def path(self) -> Path:
        return self.output.path

    def _is_ours(self, entry: Path) -> bool:
        """Whether ``entry`` is a frame this job wrote (a plain file, so named, carrying this job's key)."""
        if not _FRAME_NAME.fullmatch(entry.name) or entry.is_symlink() or not entry.is_file():
            return False
        try:
            with Image.open(entry) as frame:
                return frame.format == "PNG" and getattr(frame, "text", {}).get(FRAME_MARK) == self.key
        except (OSError, ValueError, SyntaxError):
            return False

    def problems(self) -> list[str]:
        """What forbids writing the frames there, said for the user; empty: nothing."""
        found = self.output.problems(folder=True)
        if found or not os.path.lexists(self.path):
            return found
        if self.path.is_symlink():
            return [
                f"{self.path} is a link (to {os.path.realpath(self.path)}); frames are written to a folder itself: "
                "give the folder it leads to"
            ]
        if not self.path.is_dir():
            return [f"{self.path} exists and is not a folder; a folder of frames needs a new or empty folder"]
        try:
            present = [e for e in self.path.iterdir() if not TEMPORARY.match(e.name)]
        except OSError as exc:
            return [f"{self.path}: cannot be read ({exc.strerror or exc})"]
        others = [e for e in present if not self._is_ours(e)]
        if not others:
            return []
        return [
            f"{self.path} already holds {len(others)} file(s) this render did not write; frames are written only to "
            "a new or empty folder, or over this same render's frames: choose another folder"
        ]

    def check(self) -> None:
        problems = self.problems()
        if problems:
            raise OutputError(problems[0])

    def write(self, pictures: Iterable[np.ndarray]) -> int:
        """Write the frames ((H, W, 3) uint8 each); returns how many. A new folder appears whole, when done.

        Raises:
            OutputError: the folder may not be written (checked before, and again as each frame is put in place).
            Busy: another process is writing it.
            OSError: a file could not be written (a new folder is then not made at all).
        """
        self.check()
        with self.output.claim():
            if self.path.is_dir() and any(self.path.iterdir()):
                return self._write_over(pictures)
            return self._write_new(pictures)

    def _write_new(self, pictures: Iterable[np.ndarray]) -> int:
        parent = self.path.parent
        part = temporary_beside(self.path)
        part.mkdir()
        try:
            count = 0
            for count, picture in enumerate(pictures, start=1):
                with open(part / _frame_name(count), "wb") as out:
                    self._save(picture, out)
                    out.flush()
                    os.fsync(out.fileno())
            try:
                mode = os.stat(self.path).st_mode & 0o7777
            except OSError:
                mode = 0o777 & ~UMASK
            os.chmod(part, mode)
            sync_folder(part)
            self.check()
            os.replace(part, self.path)  # onto nothing, or onto an empty folder (POSIX): never onto files
        finally:
            if part.exists():
                remove_tree(part, parent)
        sync_folder(parent)
        return count

    def _write_over(self, pictures: Iterable[np.ndarray]) -> int:
        """Replace this job's frames in place, then remove those of its frames the new render does not have."""
        stays_ours = functools.partial(self.output.check, folder=True)
        count = 0
        for count, picture in enumerate(pictures, start=1):
            target = self.path / _frame_name(count)
            if os.path.lexists(target) and not self._is_ours(target):
                raise OutputError(f"{target} was not written by this render; it is left as it is")
            write_atomically(target, functools.partial(self._save, picture), before_replace=stays_ours)
        for entry in sorted(self.path.iterdir()):
            match = _FRAME_NAME.fullmatch(entry.name)
            if match is not None and int(match.group(1)) > count and self._is_ours(entry):
                entry.unlink()
        return count

    def _save(self, picture: np.ndarray, out: BinaryIO) -> None:
        info = PngImagePlugin.PngInfo()
        info.add_itxt(FRAME_MARK, self.key)
        Image.fromarray(picture).save(out, format="PNG", pnginfo=info)


def _frame_name(number: int) -> str:
    return f"frame-{number:06d}.png"
