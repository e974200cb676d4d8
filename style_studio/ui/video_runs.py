"""Rendering the content video: Render video asks where to write it, shows each frame as it is made, then scrubs it.

The still runs (Start) work on the frame the content's frame slider shows;
Render video styles every frame with the same settings, in a background
task, with each frame's progress and the clip's ETA in the status bar and the
frame's preview in the view. Stopping keeps the finished frames: rendering
the same video again goes on from there. Once written, moving the frame
slider shows that frame of the result, and Play (Space) plays the result (or,
before one is written, the clip) at its frame rate, its source beside it for
before/after; pausing makes the frame shown the content.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtWidgets import QFileDialog, QWidget

from ..core import (
    FINISHED,
    Failed,
    Finished,
    FrameRecord,
    Job,
    RenderedVideo,
    SettingsError,
    Stopped,
    StyleStudioError,
    describe,
    door,
    read_frames,
)
from .background import BackgroundTask, TaskOutcome
from .clip_player import ClipPlayer
from .documents import export_folder
from .pictures import HistoryEntry, InputImage, seek_point
from .qt_images import array_to_qimage
from .run_bar import duration
from .state import RunStatus

if TYPE_CHECKING:
    from ..core import CancelToken, Settings
    from .background import Report
    from .feedback import Feedback
    from .image_view import ImageView
    from .loss_plot import LossPlot
    from .queue_panel import QueueController
    from .run_bar import RunBar
    from .runner import RunController
    from .state import WindowState

VIDEO_FILTER = "MP4 video (*.mp4);;QuickTime movie (*.mov);;WebM video (*.webm);;GIF animation (*.gif)"


class VideoRuns:
    """The window's video render: at most one at a time, next to (never during) a still run or the queue.

    Args:
        state: the clip, its styles, the settings and the video's options; it hears when a video starts, stops and
            ends.
        ensure_weights: the settings with weights at hand, or None when the user gave up getting them.
        controller, queue: the still runs and the queue (a video waits for both).
        view, loss_plot, run_bar, feedback: where it shows its frames and progress; ``parent``: its dialogs' parent.
        follow_frame, rest_on_frame: move the frame slider to a frame played; make a frame the content (paused).
        keep: puts a written video in the history (kept across restarts), with its first frame as its picture.
    """

    def __init__(
        self,
        *,
        state: WindowState,
        ensure_weights: Callable[[Settings], Settings | None],
        controller: RunController,
        queue: QueueController,
        view: ImageView,
        loss_plot: LossPlot,
        run_bar: RunBar,
        feedback: Feedback,
        follow_frame: Callable[[int], None],
        rest_on_frame: Callable[[int], None],
        keep: Callable[[HistoryEntry], object],
        parent: QWidget,
    ) -> None:
        self.state, self.ensure_weights = state, ensure_weights
        self.controller, self.queue = controller, queue
        self.view, self.loss_plot, self.run_bar, self.feedback = view, loss_plot, run_bar, feedback
        self.parent = parent
        self.follow_frame, self.rest_on_frame, self.keep = follow_frame, rest_on_frame, keep
        self.player = ClipPlayer(parent)
        self.player.frame.connect(self._played)
        self.player.stopped.connect(self.rest_on_frame)
        self.task: BackgroundTask[FrameRecord, RenderedVideo] | None = None
        self.job: Job | None = None
        #: the last video written, and the clip it was made from
        self.result: tuple[Path, Path] | None = None
        #: each frame's loss curves in the last render (by frame, from 0): the plot shows the frame shown
        self._curves: dict[int, list[tuple[int, dict[str, float]]]] = {}

    @property
    def running(self) -> bool:
        return self.task is not None

    def toggle_play(self) -> None:
        """Play the clip from the frame shown (its styled video once written), or pause on the frame shown."""
        if self.player.playing:
            self.player.pause()
            return
        content = self.state.photo
        if content is None or content.clip is None or content.path is None:
            self.feedback.error("Open a video as the content to play it (File ▸ Open content image… takes videos).")
            return
        if self.running:
            self.feedback.error("The video is rendering: its frames show as they are made.")
            return
        styled = self._styled_of(content)
        clip = content.clip
        self.player.play(content.path, clip.rate, clip.frames, clip.frame, styled)
        self.feedback.status(f"Playing {'the styled video' if styled else content.name}: Space pauses", 3000)

    def _styled_of(self, content: InputImage) -> Path | None:
        """The video written from this clip, while it is still there."""
        if self.result is None:
            return None
        output, clip = self.result
        return output if content.path == clip and output.is_file() else None

    def _played(self, frame: int, shown: np.ndarray, source: np.ndarray) -> None:
        self.view.set_image(array_to_qimage(shown))
        self.view.set_before(array_to_qimage(source))
        self.follow_frame(frame)

    def ask_output(self, clip: Path) -> Path | None:
        start = export_folder(clip) / f"{clip.stem}-styled.mp4"
        chosen, _ = QFileDialog.getSaveFileName(self.parent, "Render video", str(start), VIDEO_FILTER)
        if not chosen:
            return None
        path = Path(chosen)
        return path if path.suffix else path.with_suffix(".mp4")

    def start(self, output: Path | None = None) -> None:
        """Render the content video to ``output`` (asked for when None) with the current settings and styles."""
        content = self.state.photo
        if content is None or content.clip is None or content.path is None:
            self.feedback.error("Open a video as the content first (File ▸ Open content image… takes videos too).")
            return
        if self.running or self.controller.running or self.queue.busy:
            self.feedback.error("Something is rendering: stop it (Esc) before rendering the video.")
            return
        styles = [style.path for style in self.state.styles]
        if not styles or any(path is None for path in styles):
            self.feedback.error("A video's styles must be picture files: open them from files (not pasted).")
            return
        try:
            settings = self.state.settings.validate()
        except SettingsError as exc:
            self.feedback.error(str(exc))
            return
        ready = self.ensure_weights(settings)
        if ready is None:
            return
        output = output or self.ask_output(content.path)
        if output is None:
            return
        job = Job("video", content.path, tuple(p for p in styles if p is not None), ready, output,
                  video=self.state.video)  # fmt: skip
        problems = job.output_problems()
        if problems:
            self.feedback.error("; ".join(problems))
            return
        self.job = job
        self.player.pause()

        cache = self.controller.weights

        def work(report: Report[FrameRecord], cancel: CancelToken) -> RenderedVideo:
            loaded = cache.get(job.settings.network_weights)  # the still runs' weights, loaded once
            return door.clip(door.ClipSpec(job), loaded, door.ClipHooks(progress=report, cancel=cancel))

        self.task = BackgroundTask(work, "style-studio-video", failure="the video render failed")
        self.task.on_report(self._progressed)
        self.task.on_end(self._finished)
        self.loss_plot.clear()
        self._curves = {}
        self.run_bar.begin()
        self.feedback.info(f"Rendering {content.name} to {output.name}: Esc stops after keeping the finished frames")
        self.task.start()
        self.state.set_video_run(RunStatus.RUNNING)

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.state.set_video_run(RunStatus.STOPPING)
            self.run_bar.show_stopping()
            self.feedback.status("Stopping the video: the finished frames are kept…", 0)

    def wait(self) -> None:
        """Closing the window: stop playing, stop the render (its finished frames are kept) and wait for it."""
        self.player.pause(announce=False)
        if self.task is not None:
            self.task.cancel()
            self.task.wait()

    def _progressed(self, record: FrameRecord) -> None:
        if record.progress is None:
            return
        progress = record.progress
        if progress.iteration == 1 and not progress.within_iteration:
            self.loss_plot.clear()  # each frame's own curves
        if not progress.within_iteration and not progress.done:
            curves = progress.loss_curves()
            self._curves.setdefault(record.frame - 1, []).append((progress.iteration, curves))
            self.loss_plot.add(progress.iteration, curves)
        self.run_bar.show_clip_progress(
            record.frame, record.frames, progress.iteration, progress.iterations, record.clip_eta
        )
        self.feedback.status(
            f"Video: frame {record.frame} of {record.frames} · iteration {progress.iteration}/{progress.iterations}"
            f" · {f'{duration(record.clip_eta)} left' if record.clip_eta is not None else 'estimating…'}",
            0,
        )
        if progress.preview is not None:
            self.view.set_image(array_to_qimage(progress.preview))

    def _finished(self, outcome: TaskOutcome[RenderedVideo]) -> None:
        self.task = None
        job, self.job = self.job, None
        self.feedback.status("", 0)
        match outcome.ended:
            case Stopped():
                self.run_bar.show_text("Video stopped — its frames are kept")
                self.feedback.info("The video was stopped; its finished frames are kept: Render video again to go on.")
            case Failed(error=error):
                self.run_bar.show_text("Video failed")
                self.feedback.error(error)
            case Finished():
                self.run_bar.show_text("Video written")
        if isinstance(outcome.ended, Finished) and outcome.value is not None and job is not None:
            rendered = outcome.value
            self.result = (rendered.output, job.content)
            notes = "".join(f"; {note}" for note in rendered.notes)
            self.feedback.info(f"Wrote {rendered.output.name}: {rendered.frames} frames in {rendered.seconds:.0f} s"
                             f"{notes}. Space plays it; the frame slider shows its frames.")  # fmt: skip
            self._keep(rendered, job)
            self.show_result(self.state.photo)
        self.state.set_video_run(RunStatus.IDLE)

    def _keep(self, rendered: RenderedVideo, job: Job) -> None:
        """The written video in the history, its first frame as its picture."""
        try:
            first = next(iter(read_frames(rendered.output))).image()
        except (StyleStudioError, StopIteration):
            return
        label = describe(job.settings.network_weights)
        self.keep(HistoryEntry(first, job.settings, label, FINISHED, video=rendered.output, inputs=job.inputs))

    def show_result(self, content: InputImage | None) -> None:
        """Show the written video's frame for the content's frame, when the result is of this clip, and the loss
        curves of that frame (when this window rendered it)."""
        if content is None or content.clip is None or self.running:
            return
        output = self._styled_of(content)
        if output is None:
            return
        try:
            frames = read_frames(output, start=seek_point(content.clip.frame, content.clip.rate))
            picture = next(iter(frames)).picture
        except (StyleStudioError, StopIteration):
            return
        self.view.set_image(array_to_qimage(picture))
        self.loss_plot.clear()
        for step, curves in self._curves.get(content.clip.frame, []):
            self.loss_plot.add(step, curves)
