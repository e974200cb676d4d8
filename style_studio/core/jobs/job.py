"""A job: one picture to make, the one description ``render``, ``batch``, the queue and export share.

A job names its inputs (a photo, its styles, their regions), its settings and
its output with the output's options (bit depth, print resolution). One
function renders it (``door.job``), one writes a picture with its metadata
(``write_picture``), and ``picture_metadata`` is the one place the document
embedded in a picture is made. The document carries a *job key*: a hash of
the settings, the weights and the pictures' pixels (and regions, when there
are some). A job whose output already has its key is done (``already_done``):
a batch or queue that was stopped is finished by running it again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import numpy as np
from PIL import Image

from .. import settings as settings_mod
from ..about import About, bound_text, check_fields, is_int, keyed_when_set, shown
from ..about import about as _about
from ..errors import StyleStudioError
from ..io.files import folder_problem
from ..io.imageio import (
    BIT_DEPTHS,
    DEFAULT_QUALITY,
    FORMATS,
    MAX_DPI,
    QUALITIES,
    decode_image,
    image_hash,
    read_metadata,
)
from ..io.outputs import Output, file_name_problem
from ..network.weights import identity as weights_identity
from ..objective.regions import Regions
from ..settings import FLOW_METHODS, Settings

if TYPE_CHECKING:
    from ..network.instant import TunedLook
    from ..run.checkpoints import Checkpoint

log = logging.getLogger(__name__)

#: The metadata entry that says which job made an output.
JOB_KEY: Final = "job_key"
#: Formats that hold 16 bits per channel.
DEEP_FORMATS: Final = (".png", ".tif", ".tiff")


#: The print resolution an output records, described once: the check of a picture output and the window's control.
PRINT_DPI: Final = About(
    "the print resolution recorded in the picture, in dots per inch", low=1, high=MAX_DPI, zero="photo's own",
    unit="dpi", step=50, label="Print resolution",
    tip="The print resolution recorded in exported pictures: how many pixels make an inch on paper. "
    "Photo's own: the photo's, or 72 when it has none.",
)  # fmt: skip

#: A clip rendered in chunks (on a cluster): each chunk's frames, and the frames before its own that it fades in over.
CHUNK_FRAMES: Final = 48
CHUNK_OVERLAP: Final = 6


@dataclass(frozen=True)
class VideoOptions:
    """What makes a job a video's: how its frames after the first are made, and which part of the clip.

    Each field's ``About`` (as ``Settings``' are) makes its command-line option, its jobs-file key (in the
    ``video`` table), the window's field and the check of its value.
    """

    frame_iterations: int = field(
        default=30,
        metadata=_about("iterations for each frame after the first, which gets --iterations", low=1, high=100_000,
                        metavar="N", tip="Iterations for each frame after the first (the first gets Iterations): "
                        "each starts from the last one.", label="Frame iterations", group="Video", everyday=True),
    )  # fmt: skip
    temporal_weight: float = field(
        default=1.0,
        metadata=_about("how strongly a frame is kept close to the previous one where the flow is reliable; "
                        "0: each frame on its own (flickers)", low=0, high=1_000_000, metavar="W",
                        tip="How closely a frame follows the previous one where the motion is clear; 0: each "
                        "frame on its own (strokes flicker).", label="Coherence", group="Video", everyday=True,
                        step=0.25),
    )  # fmt: skip
    frame_settle: float = field(
        default=0.01,
        metadata=_about("a frame after the first stops once its loss falls by no more than this share over 10 "
                        "iterations (a still scene needs few); 0: always --frame-iterations", low=0, high=1,
                        metavar="SHARE", tip="A frame stops early once its loss falls by no more than this share "
                        "over 10 iterations; 0: every frame runs all its iterations.", earlier=0.0, zero="off",
                        label="Stop a frame at", group="Video", everyday=True, step=0.001, decimals=4),
    )  # fmt: skip
    frame_repair: float = field(
        default=0.0,
        metadata=_about("a style term of their own for the pixels the flow does not trust (uncovered behind a "
                        "moving object) and their neighbours, this many times the style weight: for areas that "
                        "still look pale; more flicker, slower frames; 0: none", low=0, high=100, metavar="W",
                        tip="Gives pixels uncovered behind a moving object, and their neighbours, a style term "
                        "of their own, this many times the style weight: for uncovered areas that still look "
                        "pale, at the cost of more flicker and slower frames; 0: off.", earlier=0.0, zero="off",
                        label="Repair uncovered", group="Video", everyday=True, decimals=1),
    )  # fmt: skip
    flow: str = field(default="dis", metadata=_about("the optical-flow method", choices=FLOW_METHODS))
    start: float = field(
        default=0.0, metadata=_about("where in the clip to begin", low=0, metavar="SECONDS", unit="seconds")
    )
    duration: float | None = field(
        default=None,
        metadata=_about("how much of the clip to style (default: to its end)", low=0, above=True, metavar="SECONDS",
                        unit="seconds"),
    )  # fmt: skip

    def problems(self) -> list[str]:
        """What is wrong with the options, each naming its field (the jobs file's key); empty: nothing.

        Any value of any type gives a message, never an exception: options come from jobs files and queue.json.
        """
        return check_fields(VideoOptions, dataclasses.asdict(self))


@dataclass(frozen=True, eq=False)
class Job:
    """One picture, or one video, to make.

    Attributes:
        id: the job's name in progress records and summaries ("3", or the jobs file's).
        content: the photo.
        styles: its style pictures (blended by ``settings.style_blend``).
        settings: everything that decides the picture.
        output: the file to write (its format from the suffix).
        regions: where each style goes, at any size (fitted to the photo), or None.
        bit_depth: 8, or 16 for print (.png and .tif).
        dpi: the print resolution to record; None: the photo's own (else 72).
        video: for a video's job (``content`` is a clip), how its frames are made; None: a picture's.
        mask: the mask file ``regions`` were read from, an input like the photo (the output may not be it).
        within: a folder the output must stay inside, checked again when it is written (a batch's ``-o``).
        generated_name: Style Studio made the output's name up (a batch's ``{photo}-{style}``, the queue's):
            it replaces only a picture of ours (one with a job key), never a user's file of that name.
    """

    id: str
    content: Path
    styles: tuple[Path, ...]
    settings: Settings
    output: Path
    regions: Regions | None = None
    bit_depth: int = 8
    dpi: float | None = None
    video: VideoOptions | None = None
    mask: Path | None = None
    within: Path | None = None
    generated_name: bool = False

    def describe(self) -> str:
        return f"{self.content.name} × {' + '.join(s.name for s in self.styles)}"

    @property
    def inputs(self) -> tuple[Path, ...]:
        """Every file the job reads: its photo or clip, its styles, its regions' mask."""
        return input_files(self.content, self.styles, self.mask)

    def target(self) -> Output:
        """Where the job's result goes, guarded: never one of its inputs, never outside ``within``, and a name
        made up replaces only a picture of ours."""
        return Output(self.output, self.inputs, self.within, made_by_style_studio if self.generated_name else None)

    def _video_output_problems(self) -> list[str]:
        from ..io.video import kind_problem

        problems = self.video.problems() if self.video is not None else []
        kind = kind_problem(self.output)
        if kind is not None:
            problems.append(kind)
        if self.bit_depth != 8:
            problems.append("a video is written with 8 bits per channel")
        return problems

    def output_problems(self) -> list[str]:
        """What is wrong with the output: its format, bit depth and resolution, and where it is (an input, a
        folder, outside ``within``); empty: nothing."""
        if self.video is not None:
            from ..io.video import output_is_folder

            return self._video_output_problems() + self.target().problems(folder=output_is_folder(self.output))
        return picture_output_problems(self.target(), bit_depth=self.bit_depth, dpi=self.dpi)


def picture_output_problems(
    output: Output, *, bit_depth: object = 8, dpi: object = None, quality: object = DEFAULT_QUALITY
) -> list[str]:
    """What forbids writing a picture to ``output`` with these options, each said for the user; empty: nothing.

    The one list of a picture output's rules: a job's (``render -o``, a batch's, the queue's) and
    ``Stylized.save``'s. ``dpi`` None: the photo's own. A value of any type gives a message, never an exception: a
    script's arguments are not type-checked.
    """
    problems = output.problems()
    path = output.path
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        problems.append(f"{path.name}: unknown output type {suffix or '(none)'}; use .png, .jpg, .webp or .tif")
    if not (is_int(bit_depth) and bit_depth in BIT_DEPTHS):
        problems.append(f"the bit depth must be 8 or 16, not {shown(bit_depth)}")
    elif bit_depth == 16 and suffix in FORMATS and suffix not in DEEP_FORMATS:
        problems.append(f"{path.name}: 16-bit pictures can be saved as .png or .tif, not {suffix}")
    # 0 is the window's "photo's own"; a job says that with None.
    if dpi is not None and (PRINT_DPI.check("dpi", dpi, float) is not None or dpi == 0):
        low, high = bound_text(PRINT_DPI.low or 0), bound_text(PRINT_DPI.high or 0)
        problems.append(f"the print resolution must be from {low} to {high} dpi, got {shown(dpi)}")
    if not (is_int(quality) and quality in QUALITIES):
        problems.append(f"the quality must be a whole number from 1 to 100, got {shown(quality)}")
    return problems


def picture_output_refusal(
    output: Output,
    named: str | None = None,
    *,
    bit_depth: object = 8,
    dpi: object = None,
    quality: object = DEFAULT_QUALITY,
) -> str | None:
    """Why a picture may not be written to ``output``, in one line that names it; None: it may. The check that
    ``render -o`` and ``Stylized.save`` share.

    ``named``: the output as it was typed, whose trailing separator ``Path`` forgets (it names a folder). Then the
    first of ``picture_output_problems``, else a folder that is missing or read-only.
    """
    problem = file_name_problem(named) if named is not None else None
    if problem is not None:
        return problem
    path = output.path
    problems = picture_output_problems(output, bit_depth=bit_depth, dpi=dpi, quality=quality)
    if problems:
        first = problems[0]
        return first if first.startswith(str(path)) else f"{path}: {first.removeprefix(path.name + ': ')}"
    return folder_problem(path, path.parent)


def input_files(content: Path | None, styles: Iterable[Path | None], mask: Path | None = None) -> tuple[Path, ...]:
    """Every file a job reads, in one order: its photo or clip, its styles, its regions' mask (those it has).

    The one list the guard of an output is given (``Output.inputs``), whatever made the job: the command line,
    a batch, the queue, the window's run or a history entry's export.
    """
    return tuple(path for path in (content, *styles, mask) if path is not None)


@dataclass(frozen=True)
class JobInputs:
    """What a worker needs to render a job, in bytes: files travel without a shared folder.

    Attributes:
        key: the job key (``job_key``), worked out once where the files are read.
        run_id: the checkpoint's name (a picture's job); None: ``batch-<job key>`` (the same job in any batch).
        resume: a checkpoint to go on from, None to start afresh, or "auto": go on from the run's checkpoint when a
            killed batch left one it can be gone on from (one it cannot use is set aside, never deleted, and
            ``RenderedJob.notes`` says where it is kept). What the run goes on from is part of what it makes, as in
            ``RunSpec``; a batch's workers keep the defaults.
        look: a picture's job with ``init`` "tuned": the look the batch tuned on its photos in this painting
            (``door.look``), painted with at once wherever the job runs; None: the kept one, or tuned on the photo.
    """

    job: Job
    content: bytes
    styles: tuple[bytes, ...]
    key: str = ""
    content_file: Path | None = None
    run_id: str | None = None
    resume: Checkpoint | Literal["auto"] | None = "auto"
    look: TunedLook | None = None

    @classmethod
    def read(cls, job: Job, *, local: bool = False) -> JobInputs:
        """The job's files, read and keyed (OSError when one cannot be read, ImageLoadError when not a picture).

        ``local``: the job renders on this machine, so a video's clip is not read into memory
        (``content`` is empty and ``content_file`` names it); a Ray task elsewhere needs its bytes.
        """
        if job.video is not None:
            from ..io.files import file_digest

            clip = b"" if local else job.content.read_bytes()
            inputs = cls(
                job, clip, tuple(p.read_bytes() for p in job.styles), content_file=job.content if local else None
            )
            styles = [decode_image(data, path.name) for data, path in zip(inputs.styles, job.styles, strict=True)]
            digest = file_digest(job.content) if local else hashlib.sha256(clip).hexdigest()
            return dataclasses.replace(inputs, key=video_key(job, digest, styles))
        inputs = cls(job, job.content.read_bytes(), tuple(p.read_bytes() for p in job.styles))
        content, styles = inputs.pictures()
        return dataclasses.replace(inputs, key=job_key(job.settings, content, styles, job.regions))

    def carried(self) -> JobInputs:
        """These inputs with a video's clip read in, for a worker on another machine (OSError: it cannot be read)."""
        if self.content_file is None:
            return self
        return dataclasses.replace(self, content=self.content_file.read_bytes(), content_file=None)

    def pictures(self) -> tuple[Image.Image, list[Image.Image]]:
        """Decoded (ImageLoadError naming the file when one is not a picture)."""
        content = decode_image(self.content, self.job.content.name)
        styles = [decode_image(data, path.name) for data, path in zip(self.styles, self.job.styles, strict=True)]
        return content, styles


def job_key(
    settings: Settings, content: Image.Image, styles: Sequence[Image.Image], regions: Regions | None = None
) -> str:
    """The job key: its settings, its weights file's contents, its pictures' pixels and its regions.

    The same picture in another format keys the same; another weights file at
    the same path keys differently; regions key as fitted to the photo. A job
    without regions keys as it always did.
    """
    digest = hashlib.sha256(json.dumps(_keyed(settings_mod.to_dict(settings)), sort_keys=True).encode())
    weights = weights_identity(settings.network_weights)
    if weights != settings.network_weights:  # a file's digest (the built-in choices key by name, as they always did)
        digest.update(weights.encode())
    for picture in (content, *styles):
        digest.update(image_hash(picture).encode())
    if regions:  # as fitted to the photo, whatever the size of the mask they came from
        digest.update(f"regions:{regions.resized(*content.size).digest()}".encode())
    return digest.hexdigest()[:32]


#: Settings added after job keys were first made, with the value that gives the pictures made before they existed
#: (``About.earlier``): they key only when set to another, so that a job keyed before they were added keeps its key
#: (and its checkpoint or kept frames are found again), whatever the defaults become.
_KEYED_WHEN_SET: Final = keyed_when_set(Settings)


#: Video options added later, with the value every video had before them (as ``_KEYED_WHEN_SET``).
_VIDEO_KEYED_WHEN_SET: Final = keyed_when_set(VideoOptions)


def _keyed(described: dict[str, Any], when_set: dict[str, object] = _KEYED_WHEN_SET) -> dict[str, Any]:
    """A document as a key takes it: a field added later is left out at the value it had before it existed."""
    return {k: v for k, v in described.items() if k not in when_set or v != when_set[k]}


def video_key(job: Job, clip_digest: str, styles: list[Image.Image]) -> str:
    """A video job's key: its settings and video options, weights, the clip file's and the styles' contents."""
    assert job.video is not None
    document = {
        "settings": _keyed(settings_mod.to_dict(job.settings)),
        "video": _keyed(dataclasses.asdict(job.video), _VIDEO_KEYED_WHEN_SET),
        "weights": weights_identity(job.settings.network_weights),
        "clip": clip_digest,
        "styles": [image_hash(s) for s in styles],
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


def picture_metadata(
    settings: Settings,
    *,
    weights_label: str | None,
    app_version: str,
    content: str | None,
    styles: Sequence[str],
    regions: Regions | None = None,
    key: str | None = None,
) -> str:
    """The document embedded in every picture Style Studio writes: settings, inputs' names, regions, job key."""
    extra: dict[str, Any] = {}
    if regions:
        extra["regions"] = regions.to_json()
    if key:
        extra[JOB_KEY] = key
    return settings_mod.dumps(
        settings, weights_label=weights_label, app_version=app_version, content=content, styles=list(styles), **extra
    )


@dataclass(frozen=True, eq=False)
class PicturePixels:
    """A picture's job made: its pixels, (H, W, 3) uint8, or uint16 for a 16-bit output, and the print resolution
    to record (the job's, else the photo's; None: the default)."""

    pixels: np.ndarray
    dpi: tuple[float, float] | None = None


@dataclass(frozen=True)
class VideoBytes:
    """A video's job made elsewhere (a Ray task): the video file's bytes."""

    data: bytes


@dataclass(frozen=True)
class VideoFile:
    """A video's job made on this machine: where its file is (``hand_over`` removes it once it is written)."""

    path: Path


@dataclass(frozen=True)
class VideoWritten:
    """A video's job its render wrote to the job's output itself (in chunks on a cluster): nothing is left to write."""


#: What a job made, one of four: a picture's pixels, or a video as bytes, as a file here, or written already.
Made: TypeAlias = PicturePixels | VideoBytes | VideoFile | VideoWritten


@dataclass(frozen=True)
class RenderedJob:
    """A job's result, as a worker sends it back.

    Attributes:
        made: what it made (``Made``), for the batch's process to write.
        metadata: the document to embed (with the job key).
        seconds: how long the render took.
        compute: where it ran ("cpu, fp32", ...).
        notes: what the user should be told (an unreadable checkpoint set aside, where it is kept).
    """

    job_id: str
    made: Made
    metadata: str
    seconds: float
    compute: str
    notes: tuple[str, ...] = ()


def job_is_video_output(output: Path) -> bool:
    from ..io.video import OUTPUT_KINDS

    return output.suffix.lower() in OUTPUT_KINDS


def output_key(output: Path) -> str | None:
    """The job key recorded in a picture Style Studio wrote; None for any other file or none."""
    if not output.is_file():
        return None
    if job_is_video_output(output):
        from ..io.video import video_comment

        text = video_comment(output)
        try:
            key = json.loads(text).get(JOB_KEY) if text is not None else None
        except (ValueError, AttributeError):
            return None
        return key if isinstance(key, str) else None
    try:
        text = read_metadata(output)
        key = json.loads(text).get(JOB_KEY) if text is not None else None
    except (StyleStudioError, ValueError, AttributeError):
        return None
    return key if isinstance(key, str) else None


def made_by_style_studio(output: Path) -> bool:
    """Whether an existing file is a picture or video a job of ours wrote (it carries a job key)."""
    return output_key(output) is not None


def free_name(wanted: Path, taken: Callable[[Path], bool]) -> Path:
    """``wanted``, or ``<stem>-2<suffix>``, ``<stem>-3<suffix>``, ... beside it: the first name not ``taken``."""
    candidate, number = wanted, 2
    while taken(candidate):
        candidate = wanted.with_name(f"{wanted.stem}-{number}{wanted.suffix}")
        number += 1
    return candidate


def already_done(job: Job, key: str) -> bool:
    """Whether the job's output exists and was made by this job (same settings, pictures and regions)."""
    return output_key(job.output) == key
