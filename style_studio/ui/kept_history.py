"""The history's results kept on disk (``core.jobs.kept``): written in the background, restored at start."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from PySide6.QtCore import QObject

from .. import __version__
from ..core import JOB_KEY, CancelToken, KeptResult, KeptResults, read_outcome
from ..core import settings as settings_mod
from .background import BackgroundTask, Report, TaskOutcome
from .history import HistoryStrip
from .pictures import HistoryEntry

log = logging.getLogger(__name__)


class KeptHistory(QObject):
    """Keeps each finished result until it is exported or removed, so that closing the window or a crash loses none.

    Args:
        history: the strip it fills at start and keeps in step.
        kept: where results are kept (``KeptResults()``: the user's data folder).
    """

    def __init__(self, history: HistoryStrip, kept: KeptResults | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.history = history
        self.kept = kept or KeptResults()
        self._writing: list[BackgroundTask[None, None]] = []
        #: What ``restore`` set aside (kept results that could not be read), for the user.
        self.notices: list[str] = []

    def restore(self) -> None:
        """Put the kept results back in the history (at start), oldest first; ``notices`` says what was set aside."""
        self.notices = []
        for result in self.kept.load(tell=self.notices.append):
            self.history.add(_entry(result))

    def holds(self, entry: HistoryEntry) -> bool:
        """Whether ``entry`` (this very one) is in the history."""
        return any(kept is entry for kept in self.history.entries)

    def add(self, entry: HistoryEntry) -> HistoryEntry:
        """Add a finished result to the history and keep it on disk (written in the background)."""
        path = self.kept.new_path()
        entry = dataclasses.replace(entry, kept=path)
        self.history.add(entry)
        document = settings_mod.dumps(
            entry.settings,
            app_version=__version__,
            weights_label=entry.weights_label,
            stop_reason=entry.outcome.word,
            created=entry.created,
            **({"regions": entry.regions.to_json()} if entry.regions else {}),
            **({JOB_KEY: entry.key} if entry.key else {}),
            **({"video": str(entry.video)} if entry.video else {}),
            inputs=[str(path) for path in entry.inputs],
        )
        picture = entry.result

        def write(report: Report[None], cancel: CancelToken) -> None:
            self.kept.keep(picture, document, path)

        job = BackgroundTask(
            write, "style-studio-keep-result", failure=f"the result could not be kept in {path.parent}"
        )
        job.on_end(lambda outcome: self._written(job, outcome))
        self._writing.append(job)
        job.start()
        return entry

    def _written(self, job: BackgroundTask[None, None], outcome: TaskOutcome[None]) -> None:
        self._writing.remove(job)
        if outcome.error:
            log.warning("%s", outcome.error)

    def let_go(self, entry: HistoryEntry) -> None:
        """The entry was exported: its kept copy is no longer needed (it stays in this session's history)."""
        if entry.kept is not None:
            self.kept.let_go(entry.kept)

    def remove(self, entry: HistoryEntry) -> None:
        """The user removed the entry from the history: it goes, with its kept copy."""
        self.let_go(entry)
        self.history.remove(entry)

    def wait(self) -> None:
        """Let the results being written finish (closing the window)."""
        for job in list(self._writing):
            job.wait()


def _entry(result: KeptResult) -> HistoryEntry:
    """A kept result as the history shows it. A video's entry stays when its file cannot be found now (moved, or on
    a drive not mounted yet): the strip shows it as missing, and the user removes it."""
    created = result.field("created")
    video = result.field("video")
    return HistoryEntry(
        result.picture,
        result.settings,
        str(result.field("weights_label", "")),
        read_outcome(result.field("stop_reason", "finished")),
        float(created) if isinstance(created, int | float) else result.path.stat().st_mtime,
        regions=result.regions,
        kept=result.path,
        key=key if isinstance(key := result.field(JOB_KEY), str) else None,
        video=Path(video) if isinstance(video, str) else None,
        inputs=_paths(result.field("inputs", [])),
    )


def _paths(value: object) -> tuple[Path, ...]:
    """The files a kept result names (its ``inputs``); what is not a list of names names none."""
    if not isinstance(value, list):
        return ()
    return tuple(Path(item) for item in value if isinstance(item, str) and item and "\0" not in item)
