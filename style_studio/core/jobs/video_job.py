"""A video's job: its frames styled one after another, each from the last, kept as they are made.

Frame t starts from stylised frame t-1 carried along the optical flow, and a
temporal term keeps it there where the flow is reliable (``temporal``); a
cut starts a frame fresh, as the first. A fresh frame is styled from the
style images; the frames after it take its look (``Look``), so the clip keeps
one look from its first frame to its last. The network is built once and
each style's statistics are computed once for the clip.

Each finished frame is kept at once, losslessly (PNG), in the clip's cache
folder with a small state file, so a stopped, killed or crashed render goes
on from the next unfinished frame (``resume``). Kept frames are never dropped
without being asked: a render that neither resumes nor restarts says how many
are kept (``KeptFramesError``), and kept frames that cannot be read are set
aside. The video file is made from the kept frames at the end, with the clip's
sound, through the job's guarded output, and appears under its name only when
complete; the cache folder is then removed.

With the tuned look (``init`` "tuned"), the look is tuned once, on frames spread over the clip, before the first
frame (``look``); every frame is then painted with it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np
from PIL import Image

from ..errors import Cancelled, StyleStudioError
from ..io.files import cache_folder, check_name, file_digest, remove_tree, write_bytes_atomically
from ..io.imageio import fit_size, load_image
from ..io.locks import held
from ..io.video import ClipInfo, probe, read_frames
from ..io.video_writer import check_writable, write_video
from ..network.layers import check_image_fits
from ..run.cancel import CancelToken, EitherToken
from .frame_cache import FrameCache
from .frame_styler import FrameStyler
from .job import Job, JobInputs, RenderedJob, VideoBytes, VideoFile, VideoOptions, video_key
from .look import _tune_look, clip_frames

if TYPE_CHECKING:
    from ..io.outputs import Output
    from ..network.instant import TunedLook
    from ..network.weights import NetworkWeights
    from ..progress import Progress, TuningProgress


@dataclass(frozen=True)
class FrameRecord:
    """Where a video's render stands: a frame's run record, with the frame's number and the clip's.

    Attributes:
        frame: 1-based number of the frame being made.
        frames: how many frames the part of the clip holds (from its headers: an estimate for some files).
        progress: the frame's own run record; None in a record that a frame was kept.
        fresh: the frame starts on its own (the first, or the first after a cut).
        clip_eta: seconds to the end of the clip, None until a frame is done.
    """

    frame: int
    frames: int
    progress: Progress | None
    fresh: bool
    clip_eta: float | None

    def to_json(self) -> dict[str, object]:
        base = self.progress.to_json() if self.progress is not None else {"done": False}
        temporal = self.progress.temporal_loss if self.progress is not None else 0.0
        return base | {
            "temporal_loss": temporal if math.isfinite(temporal) else None,
            "frame": self.frame, "frames": self.frames, "fresh": self.fresh, "clip_eta": self.clip_eta,
        }  # fmt: skip


@dataclass(frozen=True)
class RenderedVideo:
    """A video written: where, how many frames, how long it took (``flow_seconds`` of it on flow and warping)."""

    output: Path
    frames: int
    seconds: float
    compute: str
    notes: tuple[str, ...]
    key: str
    flow_seconds: float = 0.0


class KeptFramesError(StyleStudioError):
    """An earlier render of the same job kept frames, and neither going on nor starting again was asked for."""


def check_video_job(job: Job, read_styles: bool = True) -> ClipInfo:
    """What the job's clip holds, once its inputs and output are checked; nothing is written.

    With ``read_styles``, the output is also tried (``check_writable``): what
    its encoders or its folder refuse is found now, before any frame is made.

    Raises:
        StyleStudioError: a bad option, clip, style picture or output, with what is wrong.
    """
    from ..io.video import check_output, is_video_path

    if not is_video_path(job.content):
        raise StyleStudioError(
            f"{job.content.name} is not a video (by its name); style a picture with `style-studio render`"
        )
    problems = job.output_problems()
    if problems:
        raise StyleStudioError("; ".join(problems))
    check_output(job.output)
    info = probe(job.content)
    assert job.video is not None
    if job.video.start >= info.duration > 0:
        raise StyleStudioError(
            f"{job.content.name} is {info.duration:.2f} s long; a start at {job.video.start:g} s is past its end"
        )
    layers = [*job.settings.content_layers, *job.settings.active_style_layers]
    if layers:  # a thin clip is refused now, not at its first frame
        check_image_fits(
            Image.new("RGB", (info.width, info.height)), job.settings.size, layers, f"the frames of {job.content.name}"
        )
    if read_styles:
        styles = [load_image(path) for path in job.styles]
        check_writable(job.target(), info, job.video.start, video_key(job, file_digest(job.content), styles))
    return info


def _render_video(
    job: Job,
    weights: NetworkWeights,
    *,
    stop: CancelToken | None = None,
    cancel: CancelToken | None = None,
    progress: Callable[[FrameRecord], None] | None = None,
    resume: bool | None = True,
    started: Callable[[int], None] | None = None,
    say: Callable[[str], None] | None = None,
    comment: str | None = None,
    styles: Sequence[Image.Image] | None = None,
    tuning: Callable[[TuningProgress], None] | None = None,
) -> RenderedVideo:
    """Render a video job and write its output.

    Args:
        stop: set to stop after the frame being made (it is kept).
        cancel: set to stop at once (the frame being made is lost; those before it are kept).
        resume: go on from the frames an earlier render of this job kept; False: remove them and start again;
            None: neither was asked, so kept frames are an error (``KeptFramesError``) rather than lost.
        started: called with the number of frames already kept, before the first frame is made.
        say: called with what the user should know at once (kept frames that could not be read, set aside);
            without it, that is in the video's notes.
        comment: text to record in the video file's metadata (the job key is added).
        styles: the style pictures, when already decoded (else read from ``job.styles``).
        tuning: hears each step of the look tuned on the clip's frames first (``init`` "tuned"); else ``say`` does.

    Raises:
        StyleStudioError: bad input, an output that cannot be written, out of memory, a cache that cannot be
            written (the frames so far are kept).
        KeptFramesError: ``resume`` is None and an earlier render kept frames.
        Busy: another process is rendering the same job or writing the same output.
        Cancelled: ``stop`` or ``cancel`` was set; the frames made so far are kept for ``resume``.
    """
    began = time.perf_counter()
    options = job.video
    if options is None:
        raise StyleStudioError(f"{job.describe()}: not a video's job")
    info = check_video_job(job, read_styles=False)  # the styles are read once, here
    styles = list(styles) if styles is not None else [load_image(p) for p in job.styles]
    key = video_key(job, file_digest(job.content), styles)
    cache = FrameCache(key)
    stop, cancel = stop or CancelToken(), cancel or CancelToken()
    busy = f"{job.content.name} is being rendered to the same video by another style-studio process"
    target = job.target()
    notes: list[str] = []
    with target.claim(), held(cache.lock, busy):
        check_writable(target, info, options.start, key)
        tell = say if say is not None else notes.append
        _take_kept(cache, resume, tell, started)
        size = render_size(info, job.settings.size)
        compute, flow_seconds = _render_frames(job, options, info, size, styles, weights, cache, stop, cancel,
                                               progress, tell, tuning or _events_said(say))  # fmt: skip
        notes += _write(target, cache.frames(size), info, options, key, comment)
        frames, times = cache.done, cache.times
        cache.clear()
    notes[:0] = _cut_short(job.content.name, info, options, frames, times)
    seconds = time.perf_counter() - began
    return RenderedVideo(job.output, frames, seconds, compute, (*info.notes, *notes), key, flow_seconds)


def _clip_look(
    clip: Path,
    job: Job,
    info: ClipInfo,
    size: tuple[int, int],
    styles: Sequence[Image.Image],
    weights: NetworkWeights,
    cancel: CancelToken | None,
    tuning: Callable[[TuningProgress], None] | None,
    tell: Callable[[str], None] | None,
) -> TunedLook:
    """The look tuned to the painting on frames spread over the job's part of ``clip`` (its frames at ``size``),
    read only when the look is not kept; ``tuning`` hears each step, ``tell`` what the user should know besides (a
    kept look set aside, a cache that cannot be written).

    Raises:
        StyleStudioError: the clip cannot be read, the instant look's network is missing; Cancelled: stopped.
    """
    options = job.video
    assert options is not None
    frames = info.frames_between(options.start, options.duration)
    read = functools.partial(clip_frames, clip, options.start, options.duration, frames, size)
    return _tune_look(read, styles, job.settings, weights, cancel=cancel, progress=tuning, say=tell, kind="frame")


def _events_said(say: Callable[[str], None] | None) -> Callable[[TuningProgress], None] | None:
    """What hears a tuning's steps when only ``say`` was given: their events, said (None: no ``say``)."""
    if say is None:
        return None

    def told(step: TuningProgress) -> None:
        if step.event:
            say(step.event)

    return told


def _write(
    target: Output,
    frames: Iterable[tuple[float, np.ndarray]],
    info: ClipInfo,
    options: VideoOptions,
    key: str,
    comment: str | None,
) -> list[str]:
    """Write the video of ``frames`` through the job's guarded output, with the clip's sound and a document naming
    its job key (and ``comment``); what the writer noted."""
    document = json.dumps({"job_key": key, **({"note": comment} if comment else {})})
    return write_video(target, frames, info.frame_rate, info, options.start, options.duration, document, key)


def _take_kept(
    cache: FrameCache, resume: bool | None, tell: Callable[[str], None], started: Callable[[int], None] | None
) -> None:
    """Load the frames an earlier render of the job kept, and go on from them (``resume``), remove them (False) or
    refuse to lose them (None: ``KeptFramesError``); ``started`` hears how many it goes on from."""
    cache.load(tell)
    if cache.done and resume is None:
        raise KeptFramesError(
            f"{cache.done} frame(s) from an earlier render of this clip with these settings are kept: "
            "add --resume to go on from them, or --restart to start again"
        )
    if cache.done and resume is False:
        cache.clear()
    if started is not None:
        started(cache.done)


def _cut_short(name: str, info: ClipInfo, options: VideoOptions, frames: int, times: Sequence[float]) -> list[str]:
    """A note when the clip's frames end well before the time its headers announce (else none)."""
    span, last = info.seconds_between(options.start, options.duration), times[-1] if times else 0.0
    if last < span - max(2 / info.frame_rate, 0.1 * span):  # by time: a declared frame rate can be far off
        return [
            f"{name} ends after {frames} frames, at {last:.2f} s of the {span:.2f} s its headers announce (damaged "
            "or cut short?): the frames before the end were styled"
        ]
    return []


def _render_frames(
    job: Job,
    options: VideoOptions,
    info: ClipInfo,
    size: tuple[int, int],
    styles: list[Image.Image],
    weights: NetworkWeights,
    cache: FrameCache,
    stop: CancelToken,
    cancel: CancelToken,
    progress: Callable[[FrameRecord], None] | None,
    tell: Callable[[str], None],
    tuning: Callable[[TuningProgress], None] | None = None,
) -> tuple[str, float]:
    """Make the frames the cache lacks (a kept frame that cannot be read is styled again, and the frames after it),
    with the tuned look first tuned on the clip (``init`` "tuned", ``tuning`` hearing its steps) when frames are
    left to make; returns where they were computed ("cpu, fp32", ...) and the flow's seconds."""
    total = max(info.frames_between(options.start, options.duration), cache.done)
    tuned = None
    if job.settings.tunes and cache.done < total:
        tuned = _clip_look(job.content, job, info, size, styles, weights, EitherToken(stop, cancel), tuning, tell)
    styler = FrameStyler(job.settings, options, styles, weights, tuned=tuned)
    compute = cache.compute or "frames kept from an earlier render"
    made, making_since = 0, time.perf_counter()
    for clip_frame in read_frames(job.content, options.start, options.duration):
        number = clip_frame.index + 1
        total = max(total, number)
        content = np.asarray(clip_frame.image().resize(size, Image.Resampling.LANCZOS))
        kept = cache.picture(number, size, tell) if number <= cache.done else None
        if kept is not None:
            styler.kept(content, kept, fresh=number in cache.fresh)
            continue
        if stop.cancelled:
            raise Cancelled()
        guide = styler.guide(content)
        per_frame = (time.perf_counter() - making_since) / made if made else None
        report = functools.partial(frame_report, progress, number, total, guide is None, per_frame)
        picture, compute = styler.style(content, guide, cancel, report)
        cache.keep(number, picture, clip_frame.time, guide is None, compute)
        made += 1
    if cache.done == 0:
        raise StyleStudioError(f"{job.content.name}: no frames to style")
    return compute, styler.flow_seconds


def render_size(info: ClipInfo, longest: int) -> tuple[int, int]:
    """The size frames are styled at: the clip's shape with its longer side ``longest``, each side even (what
    4:2:0 video needs) and at least 2, however thin the clip."""
    width, height = fit_size(info.width, info.height, longest)
    return max(2, width - width % 2), max(2, height - height % 2)


def frame_report(
    progress: Callable[[FrameRecord], None] | None,
    number: int,
    total: int,
    fresh: bool,
    per_frame: float | None,
    record: Progress,
) -> None:
    """A frame's run record as the clip's: the clip's ETA from the frames made so far."""
    if progress is not None:
        eta = None if per_frame is None else (total - number) * per_frame + (record.eta or 0.0)
        progress(FrameRecord(number, total, record, fresh, eta))


def _render_video_inputs(
    inputs: JobInputs,
    weights: NetworkWeights,
    *,
    cancel: CancelToken | None = None,
    progress: Callable[[FrameRecord], None] | Callable[[Progress], None] | None = None,
    tuning: Callable[[TuningProgress], None] | None = None,
) -> RenderedJob:
    """A video job rendered by a batch worker; the batch's own process writes the result to its output.

    On this machine (``inputs.content_file``) the clip is read where it is,
    one frame at a time, and the video is left in the cache for the writer
    (``VideoFile``). Elsewhere (a Ray task) the clip's bytes
    are put in this machine's cache folder under the job key, so a worker
    killed halfway goes on from its kept frames when the job comes back, and
    the video's bytes are sent back. What a failed job left is removed.
    """
    from ..io.imageio import decode_image

    began = time.perf_counter()
    job = inputs.job
    videos = cache_folder() / "videos"
    folder = videos / f"job-{check_name(inputs.key, 'a job key')}"
    _sweep_old_jobs(videos)
    folder.mkdir(parents=True, exist_ok=True)
    handed_over = False
    try:
        clip = inputs.content_file
        if clip is None:
            clip = folder / f"clip{job.content.suffix}"
            if not clip.is_file() or clip.stat().st_size != len(inputs.content):
                write_bytes_atomically(clip, inputs.content)
        output = folder / f"video{job.output.suffix}"
        styles = [decode_image(data, path.name) for data, path in zip(inputs.styles, job.styles, strict=True)]
        here = dataclasses.replace(job, content=clip, output=output, within=None, mask=None)
        heard: Callable[[FrameRecord], None] | None = progress  # type: ignore[assignment]
        rendered = _render_video(here, weights, cancel=cancel, progress=heard, styles=styles, tuning=tuning)
        metadata = json.dumps({"job_key": rendered.key, "notes": list(rendered.notes)})
        seconds = time.perf_counter() - began
        if inputs.content_file is not None:
            handed_over = True
            return RenderedJob(job.id, VideoFile(output), metadata, seconds, rendered.compute)
        return RenderedJob(job.id, VideoBytes(output.read_bytes()), metadata, seconds, rendered.compute)
    finally:
        if not handed_over:
            remove_tree(folder, videos)


#: A batch video's working folder untouched this long is a killed worker's that never came back.
_STALE_JOB_SECONDS: Final = 14 * 24 * 3600.0


def _sweep_old_jobs(videos: Path) -> None:
    try:
        folders = [f for f in videos.glob("job-*") if f.is_dir() and not f.is_symlink()]
        for old in folders:
            if time.time() - old.stat().st_mtime > _STALE_JOB_SECONDS:
                remove_tree(old, videos)
    except OSError:
        pass  # a cache: what cannot be swept now is swept another time


def hand_over(rendered: RenderedJob) -> None:
    """Remove the working folder a local video job left for the writer (its video is written, or failed)."""
    if isinstance(rendered.made, VideoFile):
        remove_tree(rendered.made.path.parent, cache_folder() / "videos")
