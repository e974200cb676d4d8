"""A video's job: its frames styled one after another, each from the last, kept as they are made.

Frame t starts from stylised frame t-1 carried along the optical flow, and a
temporal term keeps it there where the flow is reliable (``temporal``); a
cut starts a frame fresh, as the first. The network is built once and the
style images' Gram matrices are computed once for the clip.

Each finished frame is kept at once, losslessly (PNG), in the clip's cache
folder with a small state file, so a stopped, killed or crashed render goes
on from the next unfinished frame (``resume``). The video file is made from
the kept frames at the end, with the clip's sound, and appears under its name
only when complete; the cache folder is then removed.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np
from PIL import Image

from .. import settings as settings_mod
from ..errors import Cancelled, StyleStudioError
from ..io.files import cache_folder, file_digest, write_atomically, write_bytes_atomically
from ..io.imageio import fit_size, image_hash, load_image
from ..io.locks import held
from ..io.video import ClipInfo, probe, read_frames
from ..io.video_writer import write_video
from ..network.weights import identity as weights_identity
from .job import Job, JobInputs, RenderedJob, VideoOptions

if TYPE_CHECKING:
    from ..objective.objective import GramCache
    from ..objective.temporal import FlowEstimator, FrameGuide
    from ..progress import Progress
    from ..run.cancel import CancelToken
    from ..run.compute import NetworkWeights

#: The clip's state file in its cache folder.
STATE: Final = "state.json"
STATE_FORMAT: Final = "style-studio-video-frames"


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


def video_key(job: Job, clip_digest: str, styles: list[Image.Image]) -> str:
    """A video job's key: its settings and video options, weights, the clip file's and the styles' contents."""
    assert job.video is not None
    document = {
        "settings": settings_mod.to_dict(job.settings),
        "video": {k: getattr(job.video, k) for k in job.video.__dataclass_fields__},
        "weights": weights_identity(job.settings.weights),
        "clip": clip_digest,
        "styles": [image_hash(s) for s in styles],
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


class FrameCache:
    """A clip's finished frames (``frame-000001.png``, ...) and its state file, in the cache folder."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.folder = cache_folder() / "videos" / key
        self.done = 0
        self.times: list[float] = []
        self.fresh: list[int] = []

    @property
    def lock(self) -> Path:
        return cache_folder() / "locks" / f"video-{self.key}.lock"

    def frame_path(self, number: int) -> Path:
        return self.folder / f"frame-{number:06d}.png"

    def load(self) -> bool:
        """Read what an earlier render left; False when there is nothing usable (it is then cleared)."""
        try:
            state = json.loads((self.folder / STATE).read_text())
            if state.get("format") != STATE_FORMAT or state.get("key") != self.key:
                raise ValueError("not this clip's")
            done, times = int(state["done"]), [float(t) for t in state["times"]]
            if len(times) != done or not all(self.frame_path(n).is_file() for n in range(1, done + 1)):
                raise ValueError("frames missing")
        except (OSError, ValueError, KeyError, TypeError):
            self.clear()
            return False
        self.done, self.times, self.fresh = done, times, [int(n) for n in state.get("fresh", [])]
        return True

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.done, self.times, self.fresh = 0, [], []

    def keep(self, number: int, picture: np.ndarray, when: float, fresh: bool) -> None:
        """Keep frame ``number`` (the next one) and then the state that counts it: a kill between them loses nothing."""
        assert number == self.done + 1
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomically(self.frame_path(number), lambda out: Image.fromarray(picture).save(out, format="PNG"))
        self.done, self.times = number, [*self.times, when]
        if fresh:
            self.fresh = [*self.fresh, number]
        state = {"format": STATE_FORMAT, "key": self.key, "done": number, "times": self.times, "fresh": self.fresh}
        write_bytes_atomically(self.folder / STATE, json.dumps(state).encode())

    def picture(self, number: int) -> np.ndarray:
        with Image.open(self.frame_path(number)) as kept:
            return np.asarray(kept.convert("RGB"))

    def frames(self) -> Iterator[tuple[float, np.ndarray]]:
        for number in range(1, self.done + 1):
            yield self.times[number - 1], self.picture(number)


def check_video_job(job: Job, read_styles: bool = True) -> ClipInfo:
    """What the job's clip holds, once its inputs and output are checked; nothing is written.

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
            f"{job.content.name} is {info.duration:.2f} s long; --start {job.video.start:g} is past its end"
        )
    for path in job.styles if read_styles else ():
        load_image(path)
    return info


def render_video(
    job: Job,
    weights: NetworkWeights,
    *,
    stop: CancelToken | None = None,
    cancel: CancelToken | None = None,
    progress: Callable[[FrameRecord], None] | None = None,
    resume: bool = True,
    started: Callable[[int], None] | None = None,
    comment: str | None = None,
    styles: Sequence[Image.Image] | None = None,
) -> RenderedVideo:
    """Render a video job and write its output.

    Args:
        stop: set to stop after the frame being made (it is kept).
        cancel: set to stop at once (the frame being made is lost; those before it are kept).
        resume: go on from the frames an earlier render of this job kept; False: start again.
        started: called with the number of frames already kept, before the first frame is made.
        comment: text to record in the video file's metadata (the job key is added).
        styles: the style pictures, when already decoded (else read from ``job.styles``).

    Raises:
        StyleStudioError: bad input, an output that cannot be written, out of memory.
        Busy: another process is rendering the same job.
        Cancelled: ``stop`` or ``cancel`` was set; the frames made so far are kept for ``resume``.
    """
    from ..run.cancel import CancelToken

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
    with held(cache.lock, busy):
        if not (resume and cache.load()):
            cache.clear()
        if started is not None:
            started(cache.done)
        compute, flow_seconds = _render_frames(job, options, info, styles, weights, cache, stop, cancel, progress)
        document = json.dumps({"job_key": key, **({"note": comment} if comment else {})})
        notes = write_video(
            job.output, cache.frames(), info.frame_rate, info, options.start, options.duration, comment=document
        )
        frames = cache.done
        cache.clear()
    expected = info.frames_between(options.start, options.duration)
    if frames < 0.9 * expected - 1:
        notes.insert(0, f"{job.content.name} ends after {frames} of the {expected} frames its headers announce "
                        "(damaged or cut short?): the frames before the end were styled")  # fmt: skip
    seconds = time.perf_counter() - began
    return RenderedVideo(job.output, frames, seconds, compute, (*info.notes, *notes), key, flow_seconds)


def _render_frames(
    job: Job,
    options: VideoOptions,
    info: ClipInfo,
    styles: list[Image.Image],
    weights: NetworkWeights,
    cache: FrameCache,
    stop: CancelToken,
    cancel: CancelToken,
    progress: Callable[[FrameRecord], None] | None,
) -> tuple[str, float]:
    """Make the frames the cache lacks; returns where they were computed ("cpu, fp32", ...) and the flow's seconds."""
    from ..objective.objective import GramCache
    from ..objective.temporal import FlowEstimator

    width, height = fit_size(info.width, info.height, job.settings.size)
    size = (width - width % 2, height - height % 2)  # even: what 4:2:0 video needs
    total = max(info.frames_between(options.start, options.duration), cache.done)
    flows = FlowEstimator(options.flow)
    grams = GramCache()
    previous: tuple[np.ndarray, np.ndarray] | None = None  # (input frame, stylised frame) at render size
    compute = ""
    made, making_since, flow_seconds = 0, time.perf_counter(), 0.0
    for clip_frame in read_frames(job.content, options.start, options.duration):
        number = clip_frame.index + 1
        total = max(total, number)
        content = np.asarray(clip_frame.image().resize(size, Image.Resampling.LANCZOS))
        if number <= cache.done:
            previous = (content, cache.picture(number))
            continue
        if stop.cancelled:
            raise Cancelled()
        flow_began = time.perf_counter()
        guide = _guide(previous, content, flows, options.temporal_weight)
        flow_seconds += time.perf_counter() - flow_began
        fresh = guide is None
        settings = job.settings if fresh else _frame_settings(job, options)
        per_frame = (time.perf_counter() - making_since) / made if made else None
        report = functools.partial(_report, progress, number, total, fresh, per_frame)
        picture, compute = _render_frame(content, styles, settings, weights, guide, grams, cancel, report)
        cache.keep(number, picture, clip_frame.time, fresh)
        made += 1
        previous = (content, picture)
    if cache.done == 0:
        raise StyleStudioError(f"{job.content.name}: no frames to style")
    return compute, flow_seconds


def _report(
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


def _frame_settings(job: Job, options: VideoOptions) -> settings_mod.Settings:
    """A frame after the first: one scale (it starts from a finished picture) and ``frame_iterations``."""
    return dataclasses.replace(job.settings, scales=1, iterations=options.frame_iterations, init="content")


def _guide(
    previous: tuple[np.ndarray, np.ndarray] | None, content: np.ndarray, flows: FlowEstimator, weight: float
) -> FrameGuide | None:
    """What this frame takes from the previous one; None for a first frame, after a cut, or without coherence."""
    from ..objective.temporal import FrameGuide, FrameMotion, warp

    if previous is None or weight <= 0:
        return None
    previous_input, previous_output = previous
    motion = FrameMotion.between(previous_input, content, flows)
    if motion.is_cut:
        return None
    return FrameGuide(motion.carried(previous_output, content), warp(previous_output, motion.backward),
                      motion.reliable, weight)  # fmt: skip


def _render_frame(
    content: np.ndarray,
    styles: list[Image.Image],
    settings: settings_mod.Settings,
    weights: NetworkWeights,
    guide: FrameGuide | None,
    grams: GramCache,
    cancel: CancelToken,
    report: Callable[[Progress], None],
) -> tuple[np.ndarray, str]:
    """One frame styled: its pixels (8 bits, as kept) and where it was computed."""
    from ..progress import CANCELLED
    from ..run.engine import StyleTransfer

    transfer = StyleTransfer(Image.fromarray(content), styles, settings, weights, cancel=cancel, preview_interval=0.5,
                             preview_max_side=256, frame=guide, known_grams=grams)  # fmt: skip
    last = None
    for record in transfer.run():
        last = record
        report(record)
    if last is None or last.stop_reason == CANCELLED or transfer.result is None:
        raise Cancelled()
    return np.asarray(transfer.result, dtype=np.uint8), last.compute


def render_video_inputs(
    inputs: JobInputs,
    weights: NetworkWeights,
    *,
    cancel: CancelToken | None = None,
    progress: Callable[[FrameRecord], None] | Callable[[Progress], None] | None = None,
) -> RenderedJob:
    """A video job from its bytes, where its files are not (a batch worker, a Ray task): the video file's bytes.

    The clip is put in this machine's cache folder under the job key, so a
    worker killed halfway goes on from its kept frames when the job comes back.
    """
    from ..io.imageio import decode_image

    began = time.perf_counter()
    job = inputs.job
    folder = cache_folder() / "videos" / f"job-{inputs.key}"
    folder.mkdir(parents=True, exist_ok=True)
    clip = folder / job.content.name
    if not clip.is_file() or clip.stat().st_size != len(inputs.content):
        write_bytes_atomically(clip, inputs.content)
    output = folder / f"video{job.output.suffix}"
    styles = [decode_image(data, path.name) for data, path in zip(inputs.styles, job.styles, strict=True)]
    here = dataclasses.replace(job, content=clip, output=output)
    report = progress if progress is not None else None
    rendered = render_video(here, weights, cancel=cancel, progress=report, styles=styles)  # type: ignore[arg-type]
    encoded = output.read_bytes()
    shutil.rmtree(folder, ignore_errors=True)
    metadata = json.dumps({"job_key": rendered.key, "notes": list(rendered.notes)})
    return RenderedJob(job.id, np.zeros((0, 0, 3), np.uint8), metadata, time.perf_counter() - began, rendered.compute,
                       encoded=encoded)  # fmt: skip
