"""Rendering a job and writing its result: the one place a picture's job or a video's is turned into a file.

``_render_job`` renders either kind of job from its inputs (a video's through
``video_job``; the door's ``job`` is its one caller); ``write_output`` writes what it made through the job's guarded
output (``Job.target``). Above the job model and the video job, so that neither
imports the other.
"""

from __future__ import annotations

import functools
import logging
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import numpy as np
from PIL import Image

from ..errors import ImageSaveError, StyleStudioError
from ..io.imageio import save_image
from ..io.outputs import Output
from ..run.checkpoints import NewerCheckpointError
from .job import Job, JobInputs, PicturePixels, RenderedJob, VideoBytes, VideoFile, VideoWritten, job_key
from .picture import PictureResult, Pictures, Previews, RunHooks, RunSpec, _run_picture
from .video_job import _render_video_inputs, hand_over

if TYPE_CHECKING:
    from ..network.weights import NetworkWeights
    from ..progress import Progress, TuningProgress
    from ..run.cancel import CancelToken
    from ..run.checkpoints import Checkpoint, CheckpointStore

log = logging.getLogger(__name__)


def _render_job(
    inputs: JobInputs,
    weights: NetworkWeights,
    *,
    cancel: CancelToken | None = None,
    progress: Callable[[Progress], None] | None = None,
    app_version: str = "",
    checkpoints: CheckpointStore | None = None,
    run_id: str | None = None,
    resume: Checkpoint | Literal["auto"] | None = "auto",
    started: Callable[[], None] | None = None,
    keep_checkpoint: bool = False,
    previews: Previews | None = None,
    tuning: Callable[[TuningProgress], None] | None = None,
) -> RenderedJob:
    """Render one job in this process, with checkpoints in ``checkpoints`` (if given) as it goes.

    Args:
        run_id: the checkpoint's name; default ``batch-<job key>`` (the same job in any batch).
        resume: a checkpoint to go on from, None to start afresh, or "auto": go on from the
            run's checkpoint when a killed batch left one it can be gone on from (one it cannot use is
            set aside, never deleted, and ``RenderedJob.notes`` says where it is kept).
        started: called once the run is set up (a resume accepted), before its first iteration.
        keep_checkpoint: leave the checkpoint for the caller to remove once the picture is written;
            else it is removed as soon as the job is rendered.
        previews: how often ``progress`` hears a record with a preview, and how large (a picture's job).
        tuning: a video's job with ``init`` "tuned": hears each step of the look being tuned on its frames.

    Raises:
        StyleStudioError: a picture that cannot be read, settings that do not fit it, out of memory.
        Cancelled: ``cancel`` was set (nothing is returned; the checkpoint is kept).
    """
    if inputs.job.video is not None:
        return _render_video_inputs(inputs, weights, cancel=cancel, progress=progress, tuning=tuning)
    job = inputs.job
    content, styles = inputs.pictures()
    pictures = Pictures(content, tuple(styles), (job.content.name, *(p.name for p in job.styles)), job.regions,
                        job.inputs)  # fmt: skip
    key = inputs.key or job_key(job.settings, content, styles, job.regions)
    run_id = run_id or f"batch-{key}"
    hooks = RunHooks(report=progress, started=(lambda _plan: started()) if started is not None else None,
                     cancel=cancel, checkpoints=checkpoints, previews=previews or Previews())  # fmt: skip

    def run(resume: Checkpoint | None) -> PictureResult:
        spec = RunSpec(pictures, job.settings, resume, run_id, deep=job.bit_depth == 16, key=key, look=inputs.look)
        return _run_picture(spec, weights, hooks)

    notes: list[str] = []
    result = _resumed_if_it_can(run, checkpoints, run_id, notes) if resume == "auto" else run(resume)
    picture = result.finished_or_raise()
    pixels = result.deep if result.deep is not None else np.asarray(picture, dtype=np.uint8)
    if checkpoints is not None and not keep_checkpoint:
        checkpoints.discard(run_id)
    dpi = (job.dpi, job.dpi) if job.dpi else content.info.get("dpi")
    for note in notes:
        log.warning("%s", note)
    return RenderedJob(job.id, PicturePixels(pixels, dpi), result.document(app_version), result.seconds,
                       result.compute, notes=tuple(notes))  # fmt: skip


def _resumed_if_it_can(
    run: Callable[[Checkpoint | None], PictureResult],
    checkpoints: CheckpointStore | None,
    run_id: str,
    notes: list[str],
) -> PictureResult:
    """``run`` gone on from the run's checkpoint where a killed batch left one it can be gone on from, else afresh.

    A checkpoint that cannot be read, a newer version's, or one the run refuses is set aside, never deleted, and
    ``notes`` say where it is kept.
    """
    if checkpoints is None:
        return run(None)
    try:  # one that cannot be read is set aside (notes say where), and the job starts again
        resume = checkpoints.load(run_id, tell=notes.append)
    except NewerCheckpointError as exc:  # a newer version's: kept aside too, and the job starts again
        notes.append(checkpoints.set_aside(run_id, exc))
        resume = None
    if resume is None:
        return run(None)
    try:
        return run(resume)
    except StyleStudioError as exc:
        notes.append(checkpoints.set_aside(run_id, exc))  # it cannot be gone on from: kept aside, started again
        return run(None)


def write_picture(
    picture: Image.Image | np.ndarray,
    output: Output,
    metadata: str,
    *,
    software: str,
    bit_depth: int = 8,
    dpi: tuple[float, float] | None = None,
) -> None:
    """Write a finished picture with its metadata through the guarded writer (ImageSaveError or OutputError
    when it cannot be; an existing file is then as it was).

    ``picture``: a PIL image, an (H, W, 3) uint8 or uint16 array, or a float one in [0, 1].
    """
    if isinstance(picture, np.ndarray) and picture.dtype == np.uint8:
        picture = Image.fromarray(picture)
    save_image(picture, output, metadata, software=software, bit_depth=bit_depth, dpi=dpi)


def write_output(job: Job, rendered: RenderedJob, software: str) -> None:
    """Write a rendered job to its output through the guarded writer (ImageSaveError, OutputError or Busy)."""
    made = rendered.made
    if isinstance(made, PicturePixels):
        write_picture(made.pixels, job.target(), rendered.metadata, software=software, bit_depth=job.bit_depth,
                      dpi=made.dpi)  # fmt: skip
        return
    try:  # a video: its bytes from a task, or its file here (removed once written, or not)
        match made:
            case VideoBytes(data):
                job.target().write_bytes(data)
            case VideoFile(path):
                with open(path, "rb") as video:
                    job.target().write(functools.partial(shutil.copyfileobj, video))
            case VideoWritten():
                pass  # written by its render, in chunks
    except OSError as exc:
        raise ImageSaveError(f"{job.output}: cannot write the video ({exc.strerror or exc})") from None
    finally:
        hand_over(rendered)
