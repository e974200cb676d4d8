"""The render queue in the window: its panel, and the controller that runs its jobs one at a time.

Queued jobs run in the window's own run thread (``RunController``), one at a
time, between the user's own runs: while one renders, Start asks the user to
pause the queue first. The queue is ``core.jobs.render_queue.RenderQueue``, saved
in the user's data folder after every change, so it survives a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Final

from PIL import Image
from PySide6.QtCore import QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QIcon, QImageReader, QPixmap
from PySide6.QtWidgets import QGridLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from .. import __version__
from ..core import (
    CANCELLED,
    FINISHED,
    CancelToken,
    Checkpoint,
    Failed,
    Finished,
    FrameRecord,
    Job,
    NewerCheckpointError,
    PictureResult,
    Pictures,
    Progress,
    QueueItem,
    QueueState,
    RenderedVideo,
    RenderQueue,
    RunSpec,
    Stopped,
    StyleStudioError,
    door,
    file_digest,
    job_key,
    load_image,
    output_key,
    queue_word,
    video_key,
    write_picture,
)
from .background import BackgroundTask, Report, TaskOutcome
from .runner import QUEUE, RunController, RunRequest

log = logging.getLogger(__name__)

THUMBNAIL = 56
#: A queued job made before, with the same job key: it is done, and nothing is run.
MADE_BEFORE: Final = Finished(made_before=True)


class QueuePanel(QWidget):
    """The jobs with their state and thumbnails; buttons to reorder, remove, pause, cancel and retry."""

    def __init__(self, controller: QueueController) -> None:
        super().__init__()
        self.controller = controller
        layout = QVBoxLayout(self)
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.list = QListWidget()
        self.list.setIconSize(QSize(THUMBNAIL, THUMBNAIL))
        self.list.setToolTip("Queued pictures, rendered one at a time while you go on working")
        layout.addWidget(self.list, 1)
        row = QGridLayout()
        self.up = QPushButton("Up")
        self.down = QPushButton("Down")
        self.remove = QPushButton("Remove")
        self.cancel = QPushButton("Cancel")
        self.retry = QPushButton("Retry")
        self.pause = QPushButton("Pause")
        self.pause.setCheckable(True)
        self.pause.setToolTip("Stop rendering the queue (the job under way goes back to waiting); press again to go on")
        buttons = (self.up, self.down, self.pause, self.remove, self.cancel, self.retry)
        for number, button in enumerate(buttons):  # two rows: the dock stays narrow
            row.addWidget(button, number // 3, number % 3)
        layout.addLayout(row)
        self.up.clicked.connect(lambda: self._with_selected(lambda i: controller.move(i, -1)))
        self.down.clicked.connect(lambda: self._with_selected(lambda i: controller.move(i, 1)))
        self.remove.clicked.connect(lambda: self._with_selected(controller.remove))
        self.cancel.clicked.connect(lambda: self._with_selected(controller.cancel))
        self.retry.clicked.connect(lambda: self._with_selected(controller.retry))
        self.pause.toggled.connect(controller.set_paused)
        self.list.currentRowChanged.connect(lambda _: self._update_buttons())
        controller.changed.connect(self.refresh)
        self.refresh()

    def selected_id(self) -> str | None:
        item = self.list.currentItem()
        return str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def _with_selected(self, action: Callable[[str], None]) -> None:
        chosen = self.selected_id()
        if chosen is not None:
            action(chosen)

    def refresh(self) -> None:
        chosen = self.selected_id()
        self.list.clear()
        queue = self.controller.queue
        for item in queue:
            text = f"{item.describe()}\n{self._state_text(item)}"
            entry = QListWidgetItem(self.controller.thumbnail(item), text)
            entry.setData(Qt.ItemDataRole.UserRole, item.id)
            entry.setToolTip(f"{item.job.output}\n{item.reason}".strip())
            self.list.addItem(entry)
            if item.id == chosen:
                self.list.setCurrentItem(entry)
        self.pause.blockSignals(True)
        self.pause.setChecked(queue.paused)
        self.pause.setText("Go on" if queue.paused else "Pause")
        self.pause.blockSignals(False)
        waiting = sum(j.state == QueueState.WAITING for j in queue)
        done = sum(isinstance(j.state, Finished) for j in queue)
        self.status.setText(
            f"{len(queue)} job(s): {done} done, {waiting} waiting" + (" — paused" if queue.paused else "")
            if len(queue)
            else "Nothing queued: Run → Add to queue (Ctrl+Shift+Return), or Apply to folder…"
        )
        self._update_buttons()

    def _state_text(self, job: QueueItem) -> str:
        match job.state:
            case QueueState.RUNNING:
                return f"rendering {self.controller.progress_text}".rstrip()
            case Failed(error=error) if error:
                return f"failed: {error}"
        return queue_word(job.state)

    def _update_buttons(self) -> None:
        job = self.controller.queue.get(self.selected_id() or "")
        has = job is not None
        for button in (self.up, self.down):
            button.setEnabled(has)
        self.remove.setEnabled(has and job is not None and job.state != QueueState.RUNNING)
        self.cancel.setEnabled(has and job is not None and isinstance(job.state, QueueState))
        self.retry.setEnabled(has and job is not None and isinstance(job.state, Failed | Stopped))


class QueueController(QObject):
    """Runs the queue's jobs one at a time on the window's ``RunController``.

    Signals:
        changed(): the queue or a job's state changed (the panel redraws).
        message(str): something to tell the user.
        error(str): something that went wrong.
    """

    changed = Signal()
    message = Signal(str)
    error = Signal(str)

    def __init__(self, queue: RenderQueue, runs: RunController, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.queue = queue
        self.runs = runs
        self.current: str | None = None
        self.progress_text = ""
        self.closing = False
        # A picture being written, or a video being rendered.
        self._writing: BackgroundTask[None, None] | BackgroundTask[FrameRecord, RenderedVideo] | None = None
        self._video_running = False
        self._thumbnails: dict[str, QIcon] = {}
        self._cancel_current = False
        # The queue listens to the runs itself: its own runs' progress and ends, and the user's ends (then it goes on).
        runs.progressed.connect(self.on_progress)
        runs.finished.connect(self.on_finished)

    @property
    def busy(self) -> bool:
        """A queued job is rendering or being written."""
        return self.current is not None or self._writing is not None

    # -- editing the queue ----------------------------------------------------------------------------

    def add(self, items: list[QueueItem]) -> None:
        self.queue.add(items)
        self.changed.emit()
        self.start_next()  # first, so that the message counts a job that started as rendering, not waiting
        waiting = sum(i.state == QueueState.WAITING for i in self.queue)
        self.message.emit(
            f"{len(items)} picture(s) queued; {waiting} waiting" if waiting else f"{len(items)} picture(s) queued"
        )

    def move(self, item_id: str, offset: int) -> None:
        self.queue.move(item_id, offset)
        self.changed.emit()

    def remove(self, item_id: str) -> None:
        if item_id != self.current:
            self._forget_progress(item_id)
            self.queue.remove(item_id)
            self._thumbnails.pop(item_id, None)
            self.changed.emit()

    def cancel(self, item_id: str) -> None:
        if item_id == self.current:
            self._cancel_current = True
            self.runs.stop()
            if self._writing is not None and self._video_running:
                self._writing.cancel()
        else:
            self._forget_progress(item_id)
            self.queue.set_state(item_id, CANCELLED)
            self.changed.emit()

    def retry(self, item_id: str) -> None:
        self._forget_progress(item_id)
        self.queue.retry(item_id)
        self.changed.emit()
        self.start_next()

    def set_paused(self, paused: bool) -> None:
        """Pause: the job under way stops and waits again; going on starts the next job."""
        self.queue.paused = paused
        self.queue.save()
        if paused and self.current is not None:
            self.runs.stop()
            if self._writing is not None and self._video_running:
                self._writing.cancel()  # the finished frames are kept: going on resumes from them
        self.changed.emit()
        if not paused:
            self.start_next()

    # -- running --------------------------------------------------------------------------------------

    def start_next(self) -> None:
        """Start the next waiting job, unless a run (the user's or the queue's) is under way."""
        if self.closing or self.busy or self.runs.running:
            return
        while (item := self.queue.next_waiting()) is not None:
            if item.job.video is not None:
                if self._start_video(item):
                    return
                continue
            try:
                job, render = self._run_request(item)
            except StyleStudioError as exc:
                self.queue.set_state(item.id, Failed.of(exc))
                self.changed.emit()
                continue
            if output_key(job.output) == render.spec.key:
                self._forget_progress(item.id)
                self.queue.set_state(item.id, MADE_BEFORE, f"{job.output} (already made)")
                self.changed.emit()
                continue
            self.current = item.id
            self._cancel_current = False
            self.progress_text = ""
            self.queue.set_state(item.id, QueueState.RUNNING)
            self.changed.emit()
            self.runs.start(render)
            return

    # -- videos: rendered whole in a task of their own, their finished frames kept when paused ------------

    def _start_video(self, item: QueueItem) -> bool:
        """Start a queued video; False when it is already made or cannot be rendered (its state says which)."""
        job = item.job
        try:
            styles = [load_image(p) for p in job.styles]
            key = video_key(job, file_digest(job.content), styles)
        except (StyleStudioError, OSError) as exc:
            self.queue.set_state(item.id, Failed.of(exc))
            self.changed.emit()
            return False
        if output_key(job.output) == key:
            self.queue.set_state(item.id, MADE_BEFORE, f"{job.output} (already made)")
            self.changed.emit()
            return False
        weights = self.runs.weights

        def work(report: Report[FrameRecord], cancel: CancelToken) -> RenderedVideo:
            job.output.parent.mkdir(parents=True, exist_ok=True)
            return door.clip(door.ClipSpec(job, tuple(styles)), weights.get(job.settings.network_weights),
                             door.ClipHooks(progress=report, cancel=cancel))  # fmt: skip

        task = BackgroundTask(work, "style-studio-queue-video", failure=f"{job.content.name}: the video failed")
        task.on_report(self._video_progress)
        task.on_end(lambda outcome: self._video_finished(item, outcome))
        self.current, self._writing, self._video_running = item.id, task, True
        self._cancel_current = False
        self.progress_text = ""
        self.queue.set_state(item.id, QueueState.RUNNING)
        self.changed.emit()
        task.start()
        return True

    def _video_progress(self, record: FrameRecord) -> None:
        if record.progress is not None:
            self.progress_text = f"frame {record.frame}/{record.frames}"
            self.changed.emit()

    def _video_finished(self, item: QueueItem, outcome: TaskOutcome[RenderedVideo]) -> None:
        self.current, self._writing, self._video_running = None, None, False
        match outcome.ended:
            case Stopped():
                # Paused or closed: it goes again later from its kept frames; cancelled: it is not done.
                self.queue.set_state(item.id, outcome.ended if self._cancel_current else QueueState.WAITING)
            case Failed():
                self.queue.set_state(item.id, outcome.ended)
            case Finished():
                self.queue.set_state(item.id, outcome.ended, str(item.job.output))
        self.changed.emit()
        self.start_next()

    def _run_request(self, item: QueueItem) -> tuple[Job, RunRequest]:
        """The item's job, and the run that renders it (its pictures read, its regions fitted to the photo)."""
        job = item.job
        names = (job.content.name, *(p.name for p in job.styles))
        pictures = Pictures(load_image(job.content), tuple(load_image(p) for p in job.styles), names, job.regions,
                            job.inputs)  # fmt: skip
        key = job_key(job.settings, pictures.content, pictures.styles, job.regions)
        return job, RunRequest(RunSpec(pictures, job.settings, self._checkpoint(item), item.run_id, key=key), QUEUE)

    def _checkpoint(self, item: QueueItem) -> Checkpoint | None:
        """Where a paused, stopped or cut-off job stood (None: it starts from the beginning)."""
        store = self.runs.checkpoints
        if store is None:
            return None

        def told(notice: str) -> None:
            log.warning("queued job %s starts again: %s", item.id, notice)

        try:  # one that cannot be read is set aside, and the job starts again
            return store.load(item.run_id, tell=told)
        except NewerCheckpointError as exc:
            told(store.set_aside(item.run_id, exc))
            return None

    def _forget_progress(self, item_id: str) -> None:
        """Remove a job's checkpoint: it was cancelled, removed, or is retried from the start."""
        item = self.queue.get(item_id)
        if item is not None and self.runs.checkpoints is not None:
            self.runs.checkpoints.discard(item.run_id)

    def on_progress(self, record: Progress) -> None:
        if self.runs.owner != QUEUE or record.within_iteration:
            return
        self.progress_text = f"{100 * record.step / max(record.steps, 1):.0f} %"
        self.changed.emit()

    def on_finished(self, owner: str, outcome: PictureResult) -> None:
        """A queued job's run ended: write its picture (in the background), then go on.

        A run of the user's that ended lets the queue go on, once the window has taken its result.
        """
        if owner != QUEUE:
            QTimer.singleShot(0, self.start_next)
            return
        item_id, self.current = self.current, None
        item = self.queue.get(item_id or "")
        if item is None:
            self.start_next()
            return
        match outcome.outcome:
            case _ if self.closing:
                self.queue.set_state(item.id, QueueState.WAITING)  # closed: it goes again later
            case Stopped() if not self._cancel_current:
                self.queue.set_state(item.id, QueueState.WAITING)  # paused: it goes again later
            case Stopped():
                self._forget_progress(item.id)
                self.queue.set_state(item.id, outcome.outcome)
            case Finished() if outcome.image is not None:
                self._write(item, outcome)
                return
            case Failed():
                self.queue.set_state(item.id, outcome.outcome)
            case Finished():  # with no picture: nothing to write
                self.queue.set_state(item.id, Failed("the run failed"))
        self.changed.emit()
        self.start_next()

    def _write(self, item: QueueItem, outcome: PictureResult) -> None:
        """Write the picture with its metadata and job key (the run's own: the one checked before it started), in
        the background."""
        result = outcome.image
        assert result is not None
        metadata = outcome.document(__version__)

        def write(report: Report[None], cancel: CancelToken) -> None:
            item.job.output.parent.mkdir(parents=True, exist_ok=True)
            write_picture(result, item.job.target(), metadata, software=f"Style Studio {__version__}")

        job = BackgroundTask(write, "style-studio-queue-write", failure=f"{item.job.output}: could not be written")
        job.on_end(lambda written: self._written(item, result, written))
        self._writing = job
        job.start()

    def _written(self, item: QueueItem, result: Image.Image, written: TaskOutcome[None]) -> None:
        self._writing = None
        if isinstance(written.ended, Failed):
            self.queue.set_state(item.id, written.ended)
            self.error.emit(f"A queued picture could not be written: {written.ended.error}")
        else:
            self.queue.set_state(item.id, FINISHED, str(item.job.output))
            self._thumbnails[item.id] = _icon(result)
        self.changed.emit()
        self.start_next()

    def wait(self) -> None:
        """Let a picture being written finish, and stop a video being rendered (closing the window)."""
        if self._writing is not None:
            if self._video_running:
                self._writing.cancel()  # its finished frames are kept
            self._writing.wait()

    # -- thumbnails ------------------------------------------------------------------------------------

    def thumbnail(self, item: QueueItem) -> QIcon:
        """The finished picture (read small from its file once), or nothing yet."""
        if item.id in self._thumbnails:
            return self._thumbnails[item.id]
        if not isinstance(item.state, Finished) or not item.job.output.is_file():
            return QIcon()
        reader = QImageReader(str(item.job.output))
        size = reader.size()
        if size.isValid():
            reader.setScaledSize(size.scaled(THUMBNAIL, THUMBNAIL, Qt.AspectRatioMode.KeepAspectRatio))
        image = reader.read()
        icon = QIcon(QPixmap.fromImage(image)) if not image.isNull() else QIcon()
        self._thumbnails[item.id] = icon
        return icon


def _icon(picture: Image.Image) -> QIcon:
    from .qt_images import pil_to_qimage

    small = picture.copy()
    small.thumbnail((THUMBNAIL, THUMBNAIL))
    return QIcon(QPixmap.fromImage(pil_to_qimage(small)))


def images_in(folder: Path) -> list[Path]:
    """The pictures in a folder (not its subfolders), by name."""
    suffixes = {".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".bmp"}
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith(".")
    )


__all__ = ["QueueController", "QueuePanel", "images_in"]
