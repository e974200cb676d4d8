"""``style-studio video``: a clip styled frame after frame, resumable, written only when it is done."""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .. import __version__
from ..core import Cancelled, CancelToken, Job, frames_name_problem
from .parser import UsageError, as_flags, chunking, preset_base, settings_from_args, video_options
from .terminal import BarReporter, handling, load_weights_shown

if TYPE_CHECKING:
    from ..core import ChunksDone, FrameRecord, RenderedVideo, TuningProgress

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

    def tuned(self, step: TuningProgress) -> None:
        """The look being tuned on the clip's frames, before the first: a JSON line, or its event (the first step
        says what is tuned) and the step beside the bar."""
        if self.mode == "json":
            self.stdout.write(json.dumps(step.to_json()) + "\n")
            self.stdout.flush()
            return
        if step.event:
            self._write(f"style-studio: {step.event}")
        if self._bar is not None:
            self._bar.set_postfix_str(f"tuning the look: step {step.step}/{step.steps} loss {step.loss:.4g}")

    def show_chunks(self, done: ChunksDone) -> None:
        """A chunked render: the bar moves as the chunks under way style their frames (the key frame first)."""
        if self.mode == "json":
            self.stdout.write(json.dumps(done.to_json()) + "\n")
            self.stdout.flush()
            return
        if done.chunk is not None:
            self._write(f"style-studio: {done.chunk.chunk.name} done in {done.chunk.seconds:.1f} s "
                        f"({done.chunks} of {done.of_chunks})")  # fmt: skip
        if self._bar is not None:
            self._bar.update(done.frames + done.styling - self._bar.n)

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
    from ..core import Busy, check_video_job, door

    named = frames_name_problem(args.output)
    if named is not None:
        raise UsageError(named)
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
    frames = info.frames_between(options.start, options.duration)
    chunks = chunking(args)  # chunks that cannot be made are refused now, not after the weights load
    loaded = load_weights_shown(settings.network_weights, mode, stderr)  # with --ray too: downloaded here, once
    reporter = FrameReporter(mode, stdout, stderr)
    stop, cancel = CancelToken(), CancelToken()

    def stopping(signum: int, frame: object) -> None:
        if stop.cancelled:
            cancel.cancel()
            stderr.write("style-studio: stopping now; the frames made so far are kept\n")
            return
        stop.cancel()
        stderr.write("style-studio: stopping: the chunks under way are cancelled\n" if args.ray else
                     "style-studio: stopping after this frame (Ctrl+C again stops at once)\n")  # fmt: skip

    wanted = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN else [])
    resume = True if args.resume else False if args.restart else None
    try:
        with handling(wanted, stopping):
            if args.ray:
                rendered = _on_ray(args.ray, chunks, job, reporter, frames, stop, resume, stderr)
            else:
                hooks = door.ClipHooks(
                    progress=reporter.show, stop=stop, cancel=cancel, say=reporter.say,
                    started=lambda kept: reporter.started(kept, frames), comment=f"Style Studio {__version__}",
                    tuning=reporter.tuned,
                )  # fmt: skip
                rendered = door.clip(door.ClipSpec(job, resume=resume), loaded, hooks)
    except (KeyboardInterrupt, Cancelled):
        reporter.close()
        stderr.write(
            f"style-studio: interrupted; {job.output} not written. The finished {'chunks' if args.ray else 'frames'} "
            "are kept: run the same command with --resume to go on\n"
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


def _on_ray(
    address: str,
    chunks: tuple[int, int],
    job: Job,
    reporter: FrameReporter,
    frames: int,
    stop: CancelToken,
    resume: bool | None,
    stderr: IO[str],
) -> RenderedVideo:
    """The clip in chunks on a Ray cluster: the first frame, then every chunk at once."""
    from ..core import door
    from .ray_cluster import RayCluster
    from .ray_video import RayChunks

    cluster = RayCluster(address)
    stderr.write(f"style-studio: on Ray {cluster.connect(stop)}\n")
    try:
        reporter.started(0, frames)
        plan = door.ChunkPlan(RayChunks(cluster), chunks[0], chunks[1])
        return door.clip(door.ClipSpec(job, resume=resume), None, door.ClipHooks(
            chunks_done=reporter.show_chunks, stop=stop, say=reporter.say, comment=f"Style Studio {__version__}",
            chunks=plan,
        ))  # fmt: skip
    finally:
        cluster.close()
