"""A run's previews kept as files, for a timelapse: ``preview-NNNN.png`` and one line each in ``previews.jsonl``.

NNNN is the run's step (0: the picture it starts from). Each line of the log is the preview's file name and its
record as ``--progress json`` prints it (``elapsed``, ``scale``, ``step``, the losses, ...). The pictures go
through the guarded writer; the log grows a whole line at a time. The folder is a new or empty one, or, for a run
that goes on from its checkpoint, one holding only that run's previews; it is none of the run's inputs or outputs
and holds none of them; and one process at a time keeps previews there (``claim``, an operating-system lock let go
when the process dies).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

from PIL import Image

from ..errors import StyleStudioError
from ..io.files import TEMPORARY, path_key
from ..io.imageio import save_image
from ..io.locks import folder_lock, held
from ..io.outputs import Output
from ..progress import Progress

#: The log beside the pictures: one JSON object per preview.
LOG: Final = "previews.jsonl"


def preview_name(step: int) -> str:
    """The file of the preview at ``step``: preview-0000.png, preview-0001.png, ..."""
    return f"preview-{step:04d}.png"


def _is_preview_file(name: str) -> bool:
    stem = name.removeprefix("preview-").removesuffix(".png")
    return name == LOG or (name.startswith("preview-") and name.endswith(".png") and stem.isdigit())


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` or below it (links followed, case folded where the disk ignores it)."""
    return path_key(path).startswith(path_key(folder).rstrip(os.sep) + os.sep)


class PreviewFolder:
    """Where a run's previews are kept as it makes them.

    Args:
        path: the folder (made at the first preview).
        inputs: the run's input files: the folder may neither be one nor hold one.
        outputs: the run's output files: the folder may neither be one nor hold one.
        going_on: the run goes on from a checkpoint: a folder holding only previews is that run's, and grows.
        tell: hears, once, why previews stopped being kept (a full disk, ...); the run itself goes on.
    """

    def __init__(
        self,
        path: Path,
        inputs: Sequence[Path] = (),
        *,
        outputs: Sequence[Path] = (),
        going_on: bool = False,
        tell: Callable[[str], None] | None = None,
    ) -> None:
        self.path, self.inputs, self.outputs = path, tuple(inputs), tuple(outputs)
        self.going_on, self.tell = going_on, tell
        #: Why previews are no longer kept; None while they are.
        self.stopped: str | None = None

    def _output(self, name: str) -> Output:
        return Output(self.path / name, self.inputs, within=self.path)

    def problems(self) -> list[str]:
        """What forbids keeping the previews there, said for the user; empty: nothing."""
        found = self._clashes()
        if found or not os.path.lexists(self.path):
            return found
        if self.path.is_symlink():
            return [f"{self.path} is a link (to {os.path.realpath(self.path)}); give the folder it leads to"]
        if not self.path.is_dir():
            return [f"{self.path} exists and is not a folder; previews go to a new or empty folder"]
        try:
            present = [entry.name for entry in self.path.iterdir() if not TEMPORARY.match(entry.name)]
        except OSError as exc:
            return [f"{self.path}: cannot be read ({exc.strerror or exc})"]
        others = [name for name in present if not _is_preview_file(name)]
        if others:
            return [
                f"{self.path} already holds {len(others)} file(s) that are not previews ({others[0]}, ...); "
                "previews go to a new or empty folder"
            ]
        if present and not self.going_on:
            return [
                f"{self.path} already holds the previews of an earlier run; choose a new or empty folder "
                "(or go on with that run, where its previews grow)"
            ]
        return []

    def _clashes(self) -> list[str]:
        """The run's own files the folder is or holds: previews never replace nor sit beside them."""
        source = Output(self.path, self.inputs).same_as_input()
        if source is not None:
            return [f"{self.path} is one of the run's inputs ({source.name}); choose another folder for the previews"]
        for source in self.inputs:
            if _inside(source, self.path):
                return [f"{self.path} holds the run's input {source.name}; choose another folder for the previews"]
        for output in self.outputs:
            if path_key(output) == path_key(self.path):
                return [f"{self.path} is the run's output too; choose another folder for the previews"]
            if _inside(output, self.path):
                return [
                    f"{self.path} would hold the run's output {output.name}; choose another folder for the previews"
                ]
        return []

    def check(self) -> None:
        """Raise StyleStudioError with the first problem (``problems``)."""
        problems = self.problems()
        if problems:
            raise StyleStudioError(problems[0])

    @contextlib.contextmanager
    def claim(self) -> Iterator[None]:
        """Hold the folder for this process while the block runs, checked again once held.

        Raises:
            Busy: another process keeps previews there.
            StyleStudioError: the folder may not be used (``problems``).
        """
        with held(
            folder_lock(self.path, "previews"),
            f"{self.path} is in use by another Style Studio process keeping its previews there; wait for it, or "
            "choose another folder for the previews",
        ):
            self.check()
            yield

    def keep(self, record: Progress) -> None:
        """Keep ``record``'s preview, if it has one (the last record's repeats the last iteration's, and is not)."""
        if record.preview is None or record.done or self.stopped is not None:
            return
        name = preview_name(record.step)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            save_image(Image.fromarray(record.preview), self._output(name))
            self._output(LOG).append_line(json.dumps({"file": name, **record.to_json()}))
        except (OSError, StyleStudioError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.stopped = f"previews are no longer kept in {self.path} ({detail}); the run goes on"
            if self.tell is not None:
                self.tell(self.stopped)
