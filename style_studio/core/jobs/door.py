"""The door every surface calls: a picture, a clip, a job of a batch, a look for many pictures, each from what to
make and how it is heard.

The notebook's ``style_studio.stylize``, the window, its queue, ``style-studio render | video | batch``, the pool's
workers and Ray's tasks all render through these calls and nothing below them (an import contract and
``tests/test_one_door.py`` keep it so):

- ``picture(RunSpec, weights, RunHooks)``: one run of a picture, to its end (the window's, the queue's, the instant
  look, a notebook's);
- ``clip(ClipSpec, weights, ClipHooks)``: a video job, its frames in this process or its chunks on a chunk runner
  (``ClipHooks.chunks``), written to its output;
- ``job(JobInputs, weights, JobHooks)``: a job of a batch or of ``render``, from its inputs' bytes, as a worker
  sends it back (``RenderedJob``); what the in-process runner, the worker pool and Ray's tasks run;
- ``look(LookSpec, weights, LookHooks)``: the look tuned to a painting on several photos (a batch's in one
  painting), before they are painted with it (``JobInputs.look``). A clip tunes its own, on its frames.

Each spec says what to make; each hooks object how it is heard and steered. Nothing here decides anything about the
picture: each call hands its spec and hooks to the one render below it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..run.spec import RunHooks, RunSpec
from .job import CHUNK_FRAMES, CHUNK_OVERLAP, Job, JobInputs, RenderedJob
from .look import _tune_look
from .picture import PictureResult, Previews, _run_picture
from .render import _render_job
from .video_chunks import ChunkRunner, ChunksDone, _render_video_in_chunks
from .video_job import FrameRecord, RenderedVideo, _render_video

if TYPE_CHECKING:
    from PIL import Image

    from ..network.instant import TunedLook
    from ..network.weights import NetworkWeights
    from ..progress import Progress, TuningProgress
    from ..run.cancel import CancelToken
    from ..run.checkpoints import CheckpointStore
    from ..settings import Settings


def picture(spec: RunSpec, weights: NetworkWeights, hooks: RunHooks = RunHooks()) -> PictureResult:
    """Run the engine on ``spec`` with ``weights`` to its end and return what it made; ``hooks`` hear and steer it.

    Raises:
        StyleStudioError: settings that do not fit the pictures, a refused resume, out of memory while setting up.
        Cancelled: stopped before the run was set up.
    A failure once the run is under way is returned (``PictureResult.outcome``: ``Failed``) with the picture made
    so far.
    """
    return _run_picture(spec, weights, hooks)


@dataclass(frozen=True)
class ClipSpec:
    """What a clip's render makes.

    Attributes:
        job: the video's job (its clip, styles, settings, video options and output).
        styles: the style pictures, when already read (else read from ``job.styles``).
        resume: go on from the frames (or chunks) an earlier render of this job kept; False: remove them and start
            again; None: neither was asked, so kept frames are an error (``KeptFramesError``) rather than lost.
    """

    job: Job
    styles: tuple[Image.Image, ...] | None = None
    resume: bool | None = True


@dataclass(frozen=True)
class ChunkPlan:
    """A clip rendered in chunks: where they run, a chunk's frames and the frames it overlaps the next by."""

    runner: ChunkRunner
    frames: int = CHUNK_FRAMES
    overlap: int = CHUNK_OVERLAP


@dataclass(frozen=True)
class ClipHooks:
    """How a clip's render is heard and steered.

    Attributes:
        progress: hears each frame's run records (in this process).
        chunks_done: hears what is done after each chunk and each frame styled (in chunks).
        stop: set to stop after the frame being made (in chunks: at once, the chunks done are kept).
        cancel: set to stop at once (the frame being made is lost; those before it are kept).
        started: called with the number of frames already kept, before the first frame is made (in this process).
        say: hears what the user should know at once (kept frames that could not be read, set aside); without it,
            that is in the video's notes.
        comment: text to record in the video file's metadata (the job key is added).
        chunks: render in chunks on this plan's runner; None: every frame in this process.
        tuning: hears each step of the look being tuned on the clip's frames (``init`` "tuned"; in this process);
            without it, ``say`` hears what is tuned.
    """

    progress: Callable[[FrameRecord], None] | None = None
    chunks_done: Callable[[ChunksDone], None] | None = None
    stop: CancelToken | None = None
    cancel: CancelToken | None = None
    started: Callable[[int], None] | None = None
    say: Callable[[str], None] | None = None
    comment: str | None = None
    chunks: ChunkPlan | None = None
    tuning: Callable[[TuningProgress], None] | None = None


def clip(spec: ClipSpec, weights: NetworkWeights | None, hooks: ClipHooks = ClipHooks()) -> RenderedVideo:
    """Render a video job and write its output: every frame here with ``weights``, or its chunks on
    ``hooks.chunks``'s runner (which has weights of its own; ``weights`` may then be None).

    Raises:
        StyleStudioError: bad input, an output that cannot be written, out of memory, a chunk that failed, a cache
            that cannot be written (the frames or chunks so far are kept).
        KeptFramesError: ``spec.resume`` is None and an earlier render kept frames.
        Busy: another process is rendering the same job or writing the same output.
        Cancelled: ``stop`` or ``cancel`` was set; what was made so far is kept for ``resume``.
        ValueError: no weights and no chunk runner.
    """
    chunks = hooks.chunks
    if chunks is not None:
        return _render_video_in_chunks(
            spec.job, chunks.runner, chunk_frames=chunks.frames, overlap=chunks.overlap, stop=hooks.stop,
            progress=hooks.chunks_done, resume=spec.resume, comment=hooks.comment, say=hooks.say, styles=spec.styles,
        )  # fmt: skip
    if weights is None:
        raise ValueError("a clip rendered in this process needs weights")
    return _render_video(
        spec.job, weights, stop=hooks.stop, cancel=hooks.cancel, progress=hooks.progress, resume=spec.resume,
        started=hooks.started, say=hooks.say, comment=hooks.comment, styles=spec.styles, tuning=hooks.tuning,
    )  # fmt: skip


@dataclass(frozen=True)
class JobHooks:
    """How a job of a batch (or of ``render``) is heard and steered.

    Attributes:
        cancel: set to stop (nothing is returned; the checkpoint is kept).
        progress: hears each run record (a video's: each frame's ``FrameRecord``).
        started: called once the run is set up (a resume accepted), before its first iteration.
        checkpoints: where the run's checkpoints go as it runs; None: none are kept.
        previews: how often ``progress`` hears a record with a preview, and how large (a picture's job).
        keep_checkpoint: leave the checkpoint for the caller to remove once the picture is written; else it is
            removed as soon as the job is rendered.
        app_version: the version named in the picture's metadata.
        tuning: a video's job with ``init`` "tuned": hears each step of the look being tuned on its frames.
    """

    cancel: CancelToken | None = None
    progress: Callable[[Progress], None] | None = None
    started: Callable[[], None] | None = None
    checkpoints: CheckpointStore | None = None
    previews: Previews | None = None
    keep_checkpoint: bool = False
    app_version: str = ""
    tuning: Callable[[TuningProgress], None] | None = None


def job(inputs: JobInputs, weights: NetworkWeights, hooks: JobHooks = JobHooks()) -> RenderedJob:
    """Render one job from its inputs in this process, as a worker sends it back (the batch writes it).

    ``inputs.run_id`` and ``inputs.resume`` say which checkpoint it goes on from (default: the job's own, when a
    killed batch left one it can go on from).

    Raises:
        StyleStudioError: a picture that cannot be read, settings that do not fit it, out of memory.
        Cancelled: ``hooks.cancel`` was set (nothing is returned; the checkpoint is kept).
    """
    return _render_job(
        inputs, weights, cancel=hooks.cancel, progress=hooks.progress, app_version=hooks.app_version,
        checkpoints=hooks.checkpoints, run_id=inputs.run_id, resume=inputs.resume, started=hooks.started,
        keep_checkpoint=hooks.keep_checkpoint, previews=hooks.previews, tuning=hooks.tuning,
    )  # fmt: skip


@dataclass(frozen=True, eq=False)
class LookSpec:
    """A look tuned to a painting for several photos.

    Attributes:
        photos: what it learns from (a batch's photos in the painting): at most ``tuning.MOST_PHOTOS``, spread over
            them, are used.
        styles: the paintings, blended by ``settings``.
        settings: the pictures' settings (``init`` "tuned"; ``tune_steps``, the size and the objective's).
    """

    photos: tuple[Image.Image, ...]
    styles: tuple[Image.Image, ...]
    settings: Settings


@dataclass(frozen=True)
class LookHooks:
    """How a look's tuning is heard and stopped.

    Attributes:
        progress: hears each step (the first says what is tuned); none when the look is kept.
        cancel: set to stop (the steps done are kept in the cache, and the next tuning goes on from them).
        say: hears what the user should know besides (a kept look set aside, a cache that cannot be written).
    """

    progress: Callable[[TuningProgress], None] | None = None
    cancel: CancelToken | None = None
    say: Callable[[str], None] | None = None


def look(spec: LookSpec, weights: NetworkWeights, hooks: LookHooks = LookHooks()) -> TunedLook:
    """The look tuned to ``spec``'s paintings: the one kept in the cache, or tuned on its photos now and kept.

    Raises:
        StyleStudioError: settings that do not fit the paintings, the instant look's network missing.
        Cancelled: ``hooks.cancel`` was set.
    """
    return _tune_look(spec.photos, spec.styles, spec.settings, weights, cancel=hooks.cancel,
                      progress=hooks.progress, say=hooks.say)  # fmt: skip
