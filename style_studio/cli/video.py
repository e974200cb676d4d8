"""``style-studio video``: a clip styled frame after frame, resumable, written only when it is done."""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .. import __version__
from ..core import Cancelled, CancelToken, Job
from .parser import UsageError, as_flags, preset_base, settings_from_args, video_options
from .terminal import BarReporter, handling, load_weights_shown

if TYPE_CHECKING:
    from ..core import FrameRecord

EXIT_INTERRUPTED = 130


class FrameReporter(BarReporter):
    """A clip's progress as a bar of frames (with the frame's iteration), JSON lines, or nothing."""

    def started(self, kept: int, frames: int) -> None:
        if kept:  # on stderr, beside the JSON lines on stdout
            self.stderr.write(f"style-studio: going on from frame {kept + 1} ({kept} frames kept)\n")
        if self.mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(total=frames, initial=kept, file=self.stderr, unit="frame", dynamic_ncols=True)

    def say(self, notice: str) -> None:
        """Tell the user something now, on stderr (beside the JSON lines on stdout)."""
        self._write(f"style-studio: {notice}")

    def show(self, record: FrameRecord) -> None:
        progress = record.progress
        if self.mode == "json":
            self.stdout.write(json.dumps(record.to_json()) + "\n")
            self.stdout.flush()
            return
        if progress is not None and progress.event:
            self._write(f"style-studio: frame {record.frame}: {progress.event}")
        if self._bar is None or progress is None:
            return
        if self._bar.total != record.frames:
            self._bar.total = record.frames
        where = "first" if record.fresh else "carried"
        self._bar.set_postfix_str(
            f"frame {record.frame} ({where}) it {progress.iteration}/{progress.iterations} "
            f"loss {progress.total_loss:.4g}",
            refresh=False,
        )
        if progress.done:
            self._bar.update(record.frame - self._bar.n)
        else:
            self._bar.refresh()


def video(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``style-studio video``; returns the exit status."""
    from ..core import Busy, check_video_job, render_video

    settings = settings_from_args(args, preset_base(args))
    options = video_options(args)
    job = Job("1", Path(args.content), tuple(Path(p) for p in args.styles), settings, Path(args.output),
              video=options)  # fmt: skip
    problems = job.output_problems()
    if problems:
        raise UsageError("; ".join(as_flags(p) for p in problems))
    info = check_video_job(job)  # the clip, the styles and the output, before the weights load
    for note in info.notes:
        stderr.write(f"style-studio: {info.path.name}: {note}\n")
    mode = args.progress or ("bar" if stderr.isatty() else "none")
    loaded = load_weights_shown(settings.weights, mode, stderr)

    frames = info.frames_between(options.start, options.duration)
    reporter = FrameReporter(mode, stdout, stderr)
    stop, cancel = CancelToken(), CancelToken()

    def stopping(signum: int, frame: object) -> None:
        if stop.cancelled:
            cancel.cancel()
            stderr.write("style-studio: stopping now; the frames made so far are kept\n")
            return
        stop.cancel()
        stderr.write("style-studio: stopping after this frame (Ctrl+C again stops at once)\n")

    wanted = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN else [])
    try:
        with handling(wanted, stopping):
            rendered = render_video(
                job, loaded, stop=stop, cancel=cancel, progress=reporter.show,
                resume=True if args.resume else False if args.restart else None,
                started=lambda kept: reporter.started(kept, frames), comment=f"Style Studio {__version__}",
                say=reporter.say,
            )  # fmt: skip
    except (KeyboardInterrupt, Cancelled):
        reporter.close()
        stderr.write(
            f"style-studio: interrupted; {job.output} not written. The finished frames are kept: "
            "run the same command with --resume to go on\n"
        )
        return EXIT_INTERRUPTED
    except Busy as exc:
        raise UsageError(str(exc)) from None
    finally:
        reporter.close()
    for note in rendered.notes[len(info.notes) :]:
        stderr.write(f"style-studio: {note}\n")
    if mode != "json":
        facts = [f"{rendered.frames} frames", f"{rendered.seconds:.1f} s", rendered.compute]
        stderr.write(f"style-studio: wrote {rendered.output} ({', '.join(f for f in facts if f)})\n")
    return 0
