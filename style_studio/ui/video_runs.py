"""Rendering the content video: Render video asks where to write it, shows each frame as it is made, then scrubs it.

The still runs (Start) work on the frame the content's frame slider shows;
Render video styles every frame with the same settings, in a background
task, with each frame's progress and the clip's ETA in the status bar and the
frame's preview in the view. Stopping keeps the finished frames: rendering
the same video again goes on from there. Once written, moving the frame
slider shows that frame of the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog

from ..core import (
    FrameRecord,
    Job,
    RenderedVideo,
    SettingsError,
    StyleStudioError,
    read_frames,
    render_video,
)
from .background import BackgroundTask, TaskOutcome
from .documents import export_folder
from .qt_images import InputImage, array_to_qimage
from .run_bar import duration

if TYPE_CHECKING:
    from ..core import CancelToken
    from .background import Report
    from .main_window import MainWindow

VIDEO_FILTER = "MP4 video (*.mp4);;QuickTime movie (*.mov);;WebM video (*.webm);;GIF animation (*.gif)"


class VideoRuns:
    """The window's video render: at most one at a time, next to (never during) a still run or the queue."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.task: BackgroundTask | None = None
        self.job: Job | None = None
        #: the last video written, and the clip it was made from
        self.result: tuple[Path, Path] | None = None

    @property
    def running(self) -> bool:
        return self.task is not None

    def update(self) -> None:
        content = self.window.inputs.content
        action = self.window.commands.render_video
        action.setEnabled(content is not None and content.clip is not None and not self.running)

    def ask_output(self, clip: Path) -> Path | None:
        start = export_folder(clip) / f"{clip.stem}-styled.mp4"
        chosen, _ = QFileDialog.getSaveFileName(self.window, "Render video", str(start), VIDEO_FILTER)
        if not chosen:
            return None
        path = Path(chosen)
        return path if path.suffix else path.with_suffix(".mp4")

    def start(self, output: Path | None = None) -> None:
        """Render the content video to ``output`` (asked for when None) with the current settings and styles."""
        window = self.window
        content = window.inputs.content
        if content is None or content.clip is None or content.path is None:
            window.show_error("Open a video as the content first (File ▸ Open content image… takes videos too).")
            return
        if self.running or window.controller.running or window.queue.busy:
            window.show_error("Something is rendering: stop it (Esc) before rendering the video.")
            return
        styles = [row.item.path for row in window.inputs.style_rows]
        if not styles or any(path is None for path in styles):
            window.show_error("A video's styles must be picture files: open them from files (not pasted).")
            return
        try:
            settings = window.current_settings().validate()
        except SettingsError as exc:
            window.show_error(str(exc))
            return
        ready = window.runs.ensure_weights(settings)
        if ready is None:
            return
        output = output or self.ask_output(content.path)
        if output is None:
            return
        job = Job("video", content.path, tuple(p for p in styles if p is not None), ready, output,
                  video=window.inputs.video_options.options())  # fmt: skip
        problems = job.output_problems()
        if problems:
            window.show_error("; ".join(problems))
            return
        self.job = job

        cache = window.controller.weights

        def work(report: Report, cancel: CancelToken) -> RenderedVideo:
            loaded = cache.get(job.settings.weights)  # the still runs' weights, loaded once
            return render_video(job, loaded, cancel=cancel, progress=report)

        self.task = BackgroundTask(work, "style-studio-video", failure="the video render failed")
        self.task.progressed.connect(self._progressed)
        self.task.finished.connect(self._finished)
        window.loss_plot.clear()
        window.run_bar.begin()
        window.show_info(f"Rendering {content.name} to {output.name}: Esc stops after keeping the finished frames")
        self.task.start()
        window._update_state()

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.window.run_bar.show_stopping()
            self.window.statusBar().showMessage("Stopping the video: the finished frames are kept…")

    def wait(self) -> None:
        """Closing the window: stop the render (its finished frames are kept) and wait for it."""
        if self.task is not None:
            self.task.cancel()
            self.task.wait()

    def _progressed(self, record: object) -> None:
        if not isinstance(record, FrameRecord) or record.progress is None:
            return
        progress = record.progress
        if progress.iteration == 1 and not progress.within_iteration:
            self.window.loss_plot.clear()  # each frame's own curves
        if not progress.within_iteration and not progress.done:
            self.window.loss_plot.add(progress.iteration, progress.loss_curves())
        self.window.run_bar.show_clip_progress(
            record.frame, record.frames, progress.iteration, progress.iterations, record.clip_eta
        )
        self.window.statusBar().showMessage(
            f"Video: frame {record.frame} of {record.frames} · iteration {progress.iteration}/{progress.iterations}"
            f" · {f'{duration(record.clip_eta)} left' if record.clip_eta is not None else 'estimating…'}"
        )
        if progress.preview is not None:
            self.window.view.set_image(array_to_qimage(progress.preview))

    def _finished(self, outcome: TaskOutcome) -> None:
        self.task = None
        job, self.job = self.job, None
        window = self.window
        window.statusBar().clearMessage()
        window.run_bar.show_text(
            "Video stopped — its frames are kept" if outcome.cancelled else
            "Video failed" if outcome.error is not None else "Video written"
        )  # fmt: skip
        if outcome.cancelled:
            window.show_info("The video was stopped; its finished frames are kept: Render video again to go on.")
        elif outcome.error is not None:
            window.show_error(outcome.error)
        elif isinstance(outcome.value, RenderedVideo) and job is not None:
            rendered = outcome.value
            self.result = (rendered.output, job.content)
            notes = "".join(f"; {note}" for note in rendered.notes)
            window.show_info(f"Wrote {rendered.output.name}: {rendered.frames} frames in {rendered.seconds:.0f} s"
                             f"{notes}. Move the frame slider to see its frames.")  # fmt: skip
            self.show_result(window.inputs.content)
        self.update()
        window._update_state()

    def show_result(self, content: InputImage | None) -> None:
        """Show the written video's frame for the content's frame, when the result is of this clip."""
        if self.result is None or content is None or content.clip is None or self.running:
            return
        output, clip = self.result
        if content.path != clip or not output.is_file():
            return
        try:
            frames = read_frames(output, start=content.clip.frame / content.clip.rate)
            picture = next(iter(frames)).picture
        except (StyleStudioError, StopIteration):
            return
        self.window.view.set_image(array_to_qimage(picture))
