"""A run's previews kept as files, for a timelapse: ``preview-NNNN.png`` and one line each in ``previews.jsonl``.

NNNN is the run's step (0: the picture it starts from). Each line of the log is the preview's file name, the run's
identity and its record as ``--progress json`` prints it (``elapsed``, ``scale``, ``step``, the losses, ...). The
pictures go through the guarded writer; the log grows a whole line at a time.

A run owns its folder as it owns its output: the folder is a new or empty one, or, for a run that goes on from its
checkpoint, one holding only that same run's previews (each line names its run); it is none of the run's inputs or
outputs and holds none of them; and one process at a time keeps previews there (``claim``, an operating-system
lock let go when the process dies). A run that goes on from step N finds the folder as its checkpoint left it: the
previews a killed run kept past step N are removed and their lines dropped, so that every line names a file that
holds the picture it describes, each step once, in order.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from PIL import Image

from ..errors import StyleStudioError, short_line
from ..io.files import TEMPORARY, path_key
from ..io.imageio import save_image
from ..io.locks import folder_lock, held
from ..io.outputs import Output
from ..progress import Progress

#: The log beside the pictures: one JSON object per preview.
LOG: Final = "previews.jsonl"
_PREVIEW: Final = re.compile(r"preview-[0-9]+\.png")


def preview_name(step: int) -> str:
    """The file of the preview at ``step``: preview-0000.png, preview-0001.png, ..."""
    return f"preview-{step:04d}.png"


def _is_preview_file(name: str) -> bool:
    return name == LOG or _PREVIEW.fullmatch(name) is not None


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` or below it (links followed, case folded where the disk ignores it)."""
    return path_key(path).startswith(path_key(folder).rstrip(os.sep) + os.sep)


def _settled(path: Path) -> Path:
    """``path`` with the links and ``..`` of the folder it is in resolved as the system will resolve them when it
    is made: ``ghost/../P1`` is ``P1``, checked as such, and no ``ghost`` is made. The folder itself stays as named
    (a link there is refused, not followed)."""
    if path.name in ("", ".", ".."):
        return Path(os.path.realpath(path))
    return Path(os.path.realpath(path.parent)) / path.name


@dataclass(frozen=True)
class _Line:
    """One whole line of the log: its text as written, and the step and run it names (None: not a preview's)."""

    text: str
    step: int | None
    run: str | None


def _line(text: str) -> _Line:
    try:
        record: Any = json.loads(text)
    except ValueError:
        return _Line(text, None, None)
    step = record.get("step") if isinstance(record, dict) else None
    if not isinstance(step, int) or isinstance(step, bool) or record.get("file") != preview_name(step):
        return _Line(text, None, None)
    run = record.get("run")
    return _Line(text, step, run if isinstance(run, str) else None)


class PreviewFolder:
    """Where a run's previews are kept as it makes them.

    Args:
        path: the folder (made at the first preview).
        inputs: the run's input files: the folder may neither be one nor hold one.
        outputs: the run's output files: the folder may neither be one nor hold one.
        going_on: the run may go on from a checkpoint: a folder holding previews is judged once it is known which
            run goes on (``claim``); else only a new or empty folder is taken.
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
        self.path, self.inputs, self.outputs = _settled(path), tuple(inputs), tuple(outputs)
        self.going_on, self.tell = going_on, tell
        #: Why previews are no longer kept; None while they are.
        self.stopped: str | None = None
        self._run: str | None = None  # the identity of the run that holds the folder (``claim``)
        self._last = -1  # the last step kept: a step is kept once, so that its line names the picture it describes

    def _output(self, name: str) -> Output:
        return Output(self.path / name, self.inputs, within=self.path)

    def problems(self) -> list[str]:
        """What forbids keeping the previews there, as far as is known before the run's checkpoint is read, said for
        the user; empty: nothing (a folder holding previews, for a run that may go on, is judged by ``claim``)."""
        found, present = self._survey()
        if found or not present or self.going_on:
            return found
        return [
            f"{self.path} already holds the previews of an earlier run; choose a new or empty folder "
            "(or go on with that run, where its previews grow)"
        ]

    def check(self) -> None:
        """Raise StyleStudioError with the first problem (``problems``)."""
        problems = self.problems()
        if problems:
            raise StyleStudioError(problems[0])

    def _survey(self) -> tuple[list[str], list[str]]:
        """The folder's problems whatever run it is for, and the previews (and log) it holds already."""
        found = self._clashes()
        if found or not os.path.lexists(self.path):
            return found, []
        if self.path.is_symlink():
            return [f"{self.path} is a link (to {os.path.realpath(self.path)}); give the folder it leads to"], []
        if not self.path.is_dir():
            return [f"{self.path} exists and is not a folder; previews go to a new or empty folder"], []
        try:
            present = [entry.name for entry in self.path.iterdir() if not TEMPORARY.match(entry.name)]
        except OSError as exc:
            return [f"{self.path}: cannot be read ({exc.strerror or exc})"], []
        others = [name for name in present if not _is_preview_file(name)]
        if others:
            return [
                f"{self.path} already holds {len(others)} file(s) that are not previews ({others[0]}, ...); "
                "previews go to a new or empty folder"
            ], []
        return [], present

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
            if _inside(self.path, output):
                return [
                    f"{self.path} would make the run's output {output} a folder; choose another folder for the previews"
                ]
            if _inside(output, self.path):
                return [
                    f"{self.path} would hold the run's output {output.name}; choose another folder for the previews"
                ]
        return []

    def _lines(self) -> list[_Line]:
        """The log's whole lines (a last line cut short, by a power cut, is not one); OSError when unreadable."""
        try:
            text = (self.path / LOG).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        whole = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
        return [_line(line) for line in whole.splitlines()]

    def _owner_problems(self, run: str, going_on_from: int | None) -> list[str]:
        """``problems`` once it is known which run goes on: a folder holding previews must hold ``run``'s only."""
        found, present = self._survey()
        if found or not present:
            return found
        if not self.going_on:
            return self.problems()
        if going_on_from is None:
            return [
                f"{self.path} holds the previews of another run, and there is no unfinished run to go on with; "
                "choose a new or empty folder"
            ]
        try:
            lines = self._lines()
        except OSError as exc:
            return [f"{self.path / LOG}: cannot be read ({exc.strerror or exc})"]
        pictures = any(_PREVIEW.fullmatch(name) for name in present)
        # Every line must name this run; pictures without a single line cannot be told to be anyone's.
        if any(line.run != run for line in lines) or (pictures and not lines):
            return [
                f"{self.path} holds the previews of another run, not of the one going on; choose a new or empty folder"
            ]
        return []

    @contextlib.contextmanager
    def claim(self, run: str, going_on_from: int | None = None) -> Iterator[None]:
        """Hold the folder for ``run`` while the block runs: checked, and made consistent for a run that goes on.

        A folder that cannot be tidied (read-only, a full disk) keeps no previews of this run (``stopped`` says why,
        ``tell`` hears it); the run goes on.

        Args:
            run: the run's identity, the same for the run and each time it goes on (each line carries it), and
                another for any other run.
            going_on_from: the step of the checkpoint the run goes on from (None: it starts afresh). Its previews up
                to that step are kept; those a killed run kept after it (and any picture without its line) are
                removed and their lines dropped. Only ``preview-NNNN.png`` files and the log are ever touched.

        Raises:
            Busy: another process keeps previews there.
            StyleStudioError: the folder may not be used (``problems``), or it holds another run's previews.
        """
        with held(
            folder_lock(self.path, "previews"),
            f"{self.path} is in use by another Style Studio process keeping its previews there; wait for it, or "
            "choose another folder for the previews",
        ):
            problems = self._owner_problems(run, going_on_from)
            if problems:
                raise StyleStudioError(problems[0])
            # A folder that cannot be tidied cannot be written either: as for a preview that cannot be written,
            # the previews stop and the run goes on.
            try:
                self._last = self._tidy(going_on_from if going_on_from is not None else -1)
            except (OSError, StyleStudioError) as exc:
                self._stop(exc)
            self._run = run
            try:
                yield
            finally:
                self._run = None

    def _tidy(self, step: int) -> int:
        """Keep the previews up to ``step`` whose files are there, each step once (its last line); returns the last."""
        if not os.path.isdir(self.path):
            return -1
        kept: dict[int, str] = {}
        for line in self._lines():
            if line.step is not None and line.step <= step and (self.path / preview_name(line.step)).is_file():
                kept[line.step] = line.text
        text = "".join(kept[n] + "\n" for n in sorted(kept))
        log = self.path / LOG
        if os.path.lexists(log) and log.read_text(encoding="utf-8", errors="replace") != text:
            # The log first: a kill before the pictures go leaves lines that each still name their picture.
            self._output(LOG).write_bytes(text.encode())
        names = {preview_name(n) for n in kept}
        for entry in sorted(self.path.iterdir()):
            if _PREVIEW.fullmatch(entry.name) and entry.name not in names and not entry.is_dir():
                self._output(entry.name).remove()
        return max(kept, default=-1)

    def keep(self, record: Progress) -> None:
        """Keep ``record``'s preview, if it has one (the last record's repeats the last iteration's, and is not)."""
        if record.preview is None or record.done or self.stopped is not None or record.step <= self._last:
            return
        name = preview_name(record.step)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            save_image(Image.fromarray(record.preview), self._output(name))
            self._output(LOG).append_line(json.dumps({"file": name, "run": self._run, **record.to_json()}))
            self._last = record.step
        except (OSError, StyleStudioError) as exc:
            self._stop(exc)

    def _stop(self, exc: OSError | StyleStudioError) -> None:
        """Keep no more previews, and say why once."""
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.stopped = short_line(f"previews are no longer kept in {self.path} ({detail}); the run goes on")
        if self.tell is not None:
            self.tell(self.stopped)
