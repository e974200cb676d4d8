"""The window's render queue as data: jobs waiting, running and done, kept in a JSON file across restarts.

Free of Qt: the window (``ui/queue_panel.py``) shows and runs it. A job's
inputs are files (a pasted picture is saved into the queue's folder first), so
the queue can be read back after the app restarts; a job that was running
when the app stopped is waiting again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, TypeAlias

from .. import settings as settings_mod
from ..errors import SettingsError
from ..io.files import check_name, data_folder, path_key, write_atomically
from ..io.kept import put_aside, read_kept
from ..io.locks import Busy, held
from ..io.video import is_video_path
from ..objective.regions import RegionError, Regions
from ..progress import CANCELLED, FINISHED, Failed, Finished, Outcome, Stopped
from ..settings import Settings
from .job import Job, VideoOptions, free_name

log = logging.getLogger(__name__)

FORMAT: Final = "style-studio-queue"
VERSION: Final = 1
QUEUE_RUN_PREFIX: Final = "queue-"
BUSY: Final = "the render queue is open in another Style Studio window: queue pictures there, or close it first"


class QueueState(StrEnum):
    """Where a queued job stands before it ends: it waits, or it runs. Once ended it has an ``Outcome`` instead."""

    WAITING = "waiting"
    RUNNING = "running"


#: Where a queued job stands: waiting, running, or how it ended (``Finished``: done; ``Stopped``: cancelled;
#: ``Failed``: failed, with the error).
Standing: TypeAlias = QueueState | Outcome


def queue_word(state: Standing) -> str:
    """The word queue.json keeps for ``state``: waiting, running, done, failed or cancelled."""
    match state:
        case QueueState():
            return state.value
        case Finished():
            return "done"  # where a run's record says "finished"
        case Failed() | Stopped():
            return state.word


def default_folder() -> Path:
    """Where the queue lives: the user's data folder (``STYLE_STUDIO_DATA`` overrides it)."""
    return data_folder()


@dataclass
class QueueItem:
    """A job in the queue, and where it stands.

    Attributes:
        job: the picture to make (``Job``: photo, styles, settings, regions, output); its id is the item's.
        state: waiting or running (``QueueState``), or how it ended (``Outcome``).
        reason: why it failed (its ``Failed.error``), or where its picture went.
    """

    job: Job
    state: Standing = QueueState.WAITING
    reason: str = ""

    @property
    def id(self) -> str:
        return self.job.id

    @property
    def word(self) -> str:
        """Its state as queue.json says it: waiting, running, done, failed or cancelled."""
        return queue_word(self.state)

    def describe(self) -> str:
        return f"{self.job.describe()} → {self.job.output.name}"

    @property
    def run_id(self) -> str:
        """The name of its run's checkpoint: a paused or cut-off job goes on from it."""
        return f"{QUEUE_RUN_PREFIX}{self.id}"

    def to_json(self) -> dict[str, Any]:
        job = self.job
        return {
            "id": job.id,
            "content": str(job.content),
            "styles": [str(s) for s in job.styles],
            "settings": settings_mod.to_dict(job.settings),
            "output": str(job.output),
            "regions": job.regions.to_json() if job.regions else None,
            "mask": str(job.mask) if job.mask is not None else None,
            "video": dataclasses.asdict(job.video) if job.video else None,
            "generated_name": job.generated_name,
            "state": self.word,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QueueItem:
        """An item as ``to_json`` wrote it.

        Raises:
            ValueError (UnsafePathError among them), KeyError, TypeError, SettingsError or RegionError: it
            cannot be read, or says something no item may (an id that is not a plain name, a path with a NUL,
            video options out of their range, an output that is one of its inputs).
        """
        if not isinstance(data, Mapping):
            raise TypeError("a queued job must be a table")
        regions = data.get("regions")
        video = data.get("video")
        if video is not None and not isinstance(video, Mapping):
            raise TypeError("its video options must be a table")
        options = VideoOptions(**video) if video else None
        if options is not None and options.problems():
            raise ValueError("; ".join(options.problems()))
        styles = data["styles"]
        if not isinstance(styles, list) or not styles:
            raise TypeError("its styles must be a list of files")
        job = Job(
            check_name(str(data.get("id") or new_id()), "a queued job's id"),
            _path(data["content"]),
            tuple(_path(s) for s in styles),
            settings_mod.from_dict(data["settings"]),
            _path(data["output"]),
            Regions.from_json(regions) if regions else None,
            video=options,
            mask=_path(data["mask"]) if data.get("mask") is not None else None,
            generated_name=data.get("generated_name", True) is not False,  # the queue names its outputs
        )
        problem = next(iter(job.target().input_problems()), None)  # the rest is checked when it is written
        if problem is not None:
            raise ValueError(problem)
        reason = str(data.get("reason", ""))
        return cls(job, _state(data.get("state"), reason), reason)


def _state(word: object, reason: str) -> Standing:
    """A state as queue.json keeps it: a job that was running when the app stopped, or of a state this version does
    not know, waits again."""
    match word:
        case "done":
            return FINISHED
        case "failed":
            return Failed(reason)
        case "cancelled":
            return CANCELLED
    return QueueState.WAITING


def _path(value: object) -> Path:
    """A file named in queue.json (TypeError or ValueError when it cannot be one)."""
    if not isinstance(value, str) or not value:
        raise TypeError(f"expected a file name, got {value!r}")
    if "\0" in value:
        raise ValueError(f"{value!r} holds a NUL character")
    return Path(value)


def new_id() -> str:
    """A new queue job's id."""
    return uuid.uuid4().hex[:12]


class RenderQueue:
    """The jobs in order, saved to ``folder/queue.json`` after every change.

    A file this version cannot read (damaged, from a newer version, or with
    jobs it cannot read) is set aside, never overwritten; ``notices`` says so.

    Args:
        folder: where the queue's file (and pasted inputs) live; None: ``default_folder()``.
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_folder()
        self.items: list[QueueItem] = []
        self.paused = False
        #: What the user should be told about the queue's file (set aside, not saved).
        self.notices: list[str] = []
        self._read_only = False
        # Held while this queue is open: one window's queue at a time (a second one is told, and queues nothing).
        self._hold = contextlib.ExitStack()
        try:
            self._hold.enter_context(held(self.folder / "queue.lock", BUSY))
        except Busy as exc:
            self.notices.append(str(exc))
            self.owned = False
            self._read_only = True
            return
        self.owned = True
        self._load()

    def close(self) -> None:
        """Let another window have the queue (when this one closes)."""
        self._hold.close()

    @property
    def path(self) -> Path:
        return self.folder / "queue.json"

    def __iter__(self) -> Iterator[QueueItem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def get(self, item_id: str) -> QueueItem | None:
        return next((i for i in self.items if i.id == item_id), None)

    def add(self, items: Sequence[QueueItem]) -> None:
        """Queue ``items`` at the end (Busy when another window has the queue)."""
        if not self.owned:
            raise Busy(BUSY)
        self.items.extend(items)
        self.save()

    def remove(self, item_id: str) -> None:
        self.items = [i for i in self.items if i.id != item_id]
        self.save()

    def move(self, item_id: str, offset: int) -> None:
        """Move a job up (offset < 0) or down the queue."""
        index = next((n for n, i in enumerate(self.items) if i.id == item_id), None)
        if index is None:
            return
        target = min(max(index + offset, 0), len(self.items) - 1)
        item = self.items.pop(index)
        self.items.insert(target, item)
        self.save()

    def next_waiting(self) -> QueueItem | None:
        return None if self.paused else next((i for i in self.items if i.state == QueueState.WAITING), None)

    def set_state(self, item_id: str, state: Standing, reason: str = "") -> None:
        """Say where a job stands; a failure's reason is its error unless ``reason`` says more."""
        item = self.get(item_id)
        if item is not None:
            item.state, item.reason = state, reason or (state.error if isinstance(state, Failed) else "")
            self.save()

    def retry(self, item_id: str) -> None:
        self.set_state(item_id, QueueState.WAITING)

    def output_taken(self, output: Path) -> bool:
        """Whether a file, or a job waiting in the queue, has the name ``output`` (as the disk compares names)."""
        key = path_key(output)
        return os.path.lexists(output) or any(
            path_key(i.job.output) == key for i in self.items if not isinstance(i.state, Finished)
        )

    def save(self) -> None:
        """Write the queue (atomically); a failure is logged: the queue in memory still runs."""
        if self._read_only:
            return
        document = {
            "format": FORMAT,
            "version": VERSION,
            "paused": self.paused,
            "items": [i.to_json() for i in self.items],
        }
        text = json.dumps(document, indent=1).encode()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, lambda out: out.writelines([text]))
        except OSError as exc:
            log.warning("could not save the render queue to %s: %s", self.path, exc)

    def _load(self) -> None:
        """Read the queue's file. What cannot be read is set aside with a notice, never dropped or overwritten."""
        document = read_kept(self.path, _read_document, "the render queue", tell=self.notices.append)
        if document is None:
            if os.path.lexists(self.path):  # it could not be moved: kept as it is, and never written over
                self._read_only = True
            return
        entries, paused = document
        items, unread = [], 0
        for entry in entries:
            try:
                items.append(QueueItem.from_json(entry))
            except (KeyError, TypeError, ValueError, AttributeError, SettingsError, RegionError) as exc:
                log.warning("a queued job cannot be read: %s", exc)
                unread += 1
        self.items = items
        self.paused = paused
        if unread:
            # The whole file goes aside (it holds those jobs as they were); the rest runs on.
            aside = put_aside(self.path, f"{unread} queued job(s) could not be read", "the render queue")
            self.notices.append(f"{unread} queued job(s) could not be read; the queue's file was moved to {aside.kept}"
                                if aside.kept is not None else str(aside))  # fmt: skip
            self._read_only = aside.kept is None
            self.save()


def _read_document(path: Path) -> tuple[list[Any], bool]:
    """A queue file's list of jobs (each read on its own) and whether it was paused."""
    document = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("it is not a render queue")
    if not isinstance(document.get("version"), int) or document["version"] > VERSION:
        raise ValueError("it was written by a newer Style Studio")
    entries = document.get("items", [])
    if not isinstance(entries, list):
        raise ValueError("its list of jobs is damaged")
    return entries, bool(document.get("paused", False))


def item_for(
    content: Path,
    styles: Sequence[Path],
    settings: Settings,
    folder: Path,
    queue: RenderQueue,
    regions: Regions | None = None,
    video: VideoOptions | None = None,
    mask: Path | None = None,
) -> QueueItem:
    """A queue job for a photo and styles (and the regions painted on it, read from ``mask`` when they were), its
    output named after them in ``folder``: a name no file and no queued job has (``-2``, ``-3``, ... when taken).

    A video's job (``content`` is a clip) makes its frames as ``video`` says (default ``VideoOptions()``).
    """
    stem = f"{content.stem}-{'+'.join(s.stem for s in styles)}"
    if is_video_path(content):  # a clip: styled whole, without regions (they are painted on one frame)
        output = free_name(folder / f"{stem}.mp4", queue.output_taken)
        return QueueItem(Job(new_id(), content, tuple(styles), settings, output, video=video or VideoOptions(),
                             generated_name=True))  # fmt: skip
    output = free_name(folder / f"{stem}.png", queue.output_taken)
    return QueueItem(Job(new_id(), content, tuple(styles), settings, output, regions, mask=mask, generated_name=True))


def is_queue_run(run_id: str) -> bool:
    """Whether a checkpoint is a queued job's (the queue resumes it; the window's banner does not offer it)."""
    return run_id.startswith(QUEUE_RUN_PREFIX)
