"""The door for Python: ``stylize`` a photo and ``stylize_video`` a clip, with the settings the command line names.

    import style_studio

    picture = style_studio.stylize("photo.jpg", "painting.jpg", size=384, iterations=100)
    picture.save("photo-painting.png")

Each goes through the door every other surface calls (``core.jobs.door``: a picture's ``door.picture``, a video's
``door.clip``), so a notebook's picture is the command line's and the window's for the same settings. Settings go by
the command line's names (``style_weight=``, ``style_layers={"relu1_1": 1, ...}``, ``preset="quick"``); a picture
saved writes through the guarded writer, never over its own photo or styles.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import numpy as np
from PIL import Image

from .core.about import shown
from .core.errors import Cancelled, ImageLoadError, OutputError, SettingsError, StyleStudioError
from .core.io.imageio import image_file, load_image, picture_from, save_image
from .core.io.outputs import Output, frames_name_problem
from .core.jobs import door
from .core.jobs.job import Job, VideoOptions, picture_output_refusal
from .core.jobs.picture import PictureResult, Pictures, RunHooks, RunSpec
from .core.jobs.video_job import FrameRecord, RenderedVideo
from .core.network.weights import WeightsCache, load_weights
from .core.objective.regions import Regions
from .core.progress import Failed, Outcome, Progress
from .core.run.cancel import CancelToken
from .core.settings import DEFAULTS, Settings, from_fields, preset

if TYPE_CHECKING:
    from .core.network.weights import LoadedWeights

log = logging.getLogger(__name__)

#: A photo or a style: a file's name, a PIL image, or an array of pixels (``picture_from``).
PictureSource: TypeAlias = "str | os.PathLike[str] | Image.Image | np.ndarray"

#: The weights of the last call, kept for the next (the ImageNet file is 548 MB).
_weights = WeightsCache(lambda choice: _downloading(choice))


def _downloading(choice: str) -> LoadedWeights:
    """The weights ``choice`` names, ImageNet's downloaded the first time (548 MB), its progress logged."""
    return load_weights(choice, download=True, progress=_DownloadLog())


class _DownloadLog:
    """A download's progress in the log, at every tenth of it (a notebook shows the log; nothing is printed)."""

    def __init__(self) -> None:
        self._told = -1

    def __call__(self, received: int, total: int | None) -> None:
        tenth = received * 10 // total if total else received // (50 * 2**20)
        if tenth > self._told:
            self._told = tenth
            of = f" of {total / 2**20:.0f}" if total else ""
            log.info("downloading the ImageNet VGG19 weights: %.0f%s MB", received / 2**20, of)


@dataclass(frozen=True, eq=False)
class Stylized:
    """A picture ``stylize`` made, with what it was made from.

    Attributes:
        image: the picture (8-bit RGB): the finished one, or the best so far of a run that was stopped.
        settings: the settings it was made with.
        finished: the run went to its end (False: ``cancel`` stopped it, and ``image`` is the picture so far).
    """

    image: Image.Image
    settings: Settings
    finished: bool
    _result: PictureResult = field(repr=False)

    def _repr_png_(self) -> bytes | None:
        """The picture, as a notebook shows it."""
        shown: bytes | None = self.image._repr_png_()
        return shown

    @property
    def outcome(self) -> Outcome:
        """How the run ended: ``Finished``, or ``Stopped`` by ``cancel`` (a failure is raised instead)."""
        return self._result.outcome

    @property
    def seconds(self) -> float:
        """How long the run took, setting up included."""
        return self._result.seconds

    @property
    def compute(self) -> str:
        """Where it ran ("cpu, bf16", "cuda:0, fp16", ...)."""
        return self._result.compute

    @property
    def weights(self) -> str:
        """The network's weights, as the window names them."""
        return self._result.weights_label

    @property
    def metadata(self) -> str:
        """The document a saved file carries: its settings, weights, inputs and job key (the window reads it back)."""
        from . import __version__

        return self._result.document(__version__)

    def save(
        self, path: str | os.PathLike[str], *, bit_depth: int = 8, dpi: float | None = None, quality: int = 95
    ) -> Path:
        """Write the picture with its settings embedded, atomically: a file there already stays as it was until the
        new one is whole, and the picture's own photo and styles are never written over.

        Checked first as ``render -o`` is, by the same check (``picture_output_refusal``).

        Args:
            path: .png, .jpg, .webp or .tif.
            bit_depth: 8, or 16 for print (.png and .tif), from the run's own values rather than the 8-bit picture.
            dpi: the print resolution to record, from 1 to ``MAX_DPI`` (default: the photo's own, else 72).
            quality: of a .jpg or .webp, from 1 to 100.

        Raises:
            OutputError: nothing was written: ``path`` is not a file's name, names a folder (``new.png/``), is the
                photo or a style (by any name), is read-only, is in a missing or read-only folder, has an unknown
                type; or ``bit_depth``, ``dpi`` or ``quality`` is not one the file can have. The message names it.
            ImageSaveError: the file could not be written (a full disk, ...); one that was there is as it was.
        """
        from . import __version__

        named = _file_name(path, "the output", "a file's name", OutputError)
        output = Output(Path(named), self._result.pictures.files)  # checked by the writer, again as it replaces
        refusal = picture_output_refusal(output, named, bit_depth=bit_depth, dpi=dpi, quality=quality)
        if refusal is not None:
            raise OutputError(refusal)
        pixels: Image.Image | np.ndarray = self.image
        if bit_depth == 16 and self._result.deep is not None:
            pixels = self._result.deep
        resolution = (dpi, dpi) if dpi is not None else self._result.pictures.content.info.get("dpi")
        return save_image(pixels, output, self.metadata, quality=quality, software=f"Style Studio {__version__}",
                          bit_depth=bit_depth, dpi=resolution)  # fmt: skip


def stylize(
    photo: PictureSource,
    *styles: PictureSource,
    preset: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    regions: Regions | None = None,
    progress: Callable[[Progress], None] | None = None,
    cancel: CancelToken | None = None,
    **fields: Any,
) -> Stylized:
    """Paint ``photo`` in the style of ``styles`` (blended by ``style_blend``) and return the picture.

    Args:
        photo, styles: file names, PIL images, or arrays of pixels (uint8, uint16, or floats from 0 to 1).
        preset: a built-in preset's name ("instant", "quick", "default", "best") or a preset file the window saved,
            to start from.
        settings: settings to start from instead (a ``Stylized``'s, say); without either, the defaults.
        regions: where each style goes (``Regions``), at any size.
        progress: hears each record of the run (``Progress``): the step, the losses, a preview now and then.
        cancel: a ``CancelToken``; cancelled, the run stops within an iteration and the picture so far is returned.
        fields: settings by the command line's names: ``size=384``, ``iterations=100``, ``style_weight=1e4``,
            ``weights="untrained"``, ``style_layers={"relu1_1": 1.0, ...}``, ``style_blend=(2, 1)``; a value may be
            typed as on the command line, read by its reading (``style_layers="relu1_1:1,relu2_1:0.5"``,
            ``style_blend="2,1"``, ``content_layers="relu4_2"``: ``settings.from_fields``).

    The ImageNet weights are downloaded the first time they are needed (548 MB), as the command line does.

    Raises:
        SettingsError: an unknown setting, a value out of its range or of the wrong kind, blend weights that do not
            match the styles; ``settings``, ``regions``, ``progress`` or ``cancel`` of the wrong kind (each named).
        ImageLoadError: a picture that cannot be read (a PIL image closed, or of a truncated file), named.
        WeightsError: weights that cannot be had.
        Cancelled: ``cancel`` was set before the run began.
        StyleStudioError: anything else the run could not do (out of memory, ...), said for the user.
    """
    if not styles:
        raise SettingsError("give at least one style picture")
    _refuse(_hook_problems(progress, cancel) + _regions_problems(regions))
    chosen = settings_for(preset, settings, fields)
    chosen.blend_weights(len(styles))
    pictures = _pictures(photo, styles, regions)
    result = door.picture(RunSpec(pictures, chosen, deep=True), _weights.get(chosen.network_weights),
                          RunHooks(report=progress, cancel=cancel))  # fmt: skip
    if isinstance(result.outcome, Failed):
        raise result.outcome.raised()
    if result.image is None:
        raise Cancelled()
    return Stylized(result.image, result.settings, result.finished, result)


def stylize_video(
    clip: str | os.PathLike[str],
    *styles: PictureSource,
    output: str | os.PathLike[str],
    preset: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    video: VideoOptions | None = None,
    progress: Callable[[FrameRecord], None] | None = None,
    cancel: CancelToken | None = None,
    resume: bool = True,
    **fields: Any,
) -> RenderedVideo:
    """Paint every frame of ``clip`` in the style of ``styles``, each from the last, and write ``output`` with the
    clip's sound.

    Each frame is kept as it is made, so a render stopped (``cancel``), killed or crashed goes on from the next
    frame when called again with the same arguments (``resume=False`` starts again instead). ``output`` appears
    only when the video is whole.

    Args:
        fields: the settings by the command line's names, as for ``stylize``, and the video's options
            (``frame_iterations=``, ``temporal_weight=``, ``start=``, ``duration=``, ...; ``VideoOptions``).
        video: the video's options to start from (``fields`` change them).
        progress: hears each frame's run records (``FrameRecord``: the frame's number, the clip's, the run's record).

    Raises:
        Cancelled: ``cancel`` was set; the frames made so far are kept for the next call.
        SettingsError: as ``stylize``'s, and ``clip``, ``output``, ``video`` or ``resume`` of the wrong kind, an
            output that may not be written (one of the inputs, ``new.gif/``, ...).
        The rest as ``stylize``'s, and VideoError for a clip that cannot be read or a video that cannot be written.
    """
    if not styles:
        raise SettingsError("give at least one style picture")
    clip_file = Path(_file_name(clip, "clip", "a video file's name"))
    output_path = Path(_file_name(output, "output", "a video file's name, or a folder's for its frames"))
    problems = _hook_problems(progress, cancel)
    if video is not None and not isinstance(video, VideoOptions):
        problems.append(f"video must be a VideoOptions, got {_given(video)}; or give its fields by name (start=2, ...)")
    if not isinstance(resume, bool):
        problems.append(f"resume must be True or False, got {_given(resume)}")
    frames = frames_name_problem(output) if isinstance(output, str) else None  # a Path has lost the separator
    _refuse(problems + ([frames] if frames is not None else []))
    video_names = {f.name for f in dataclasses.fields(VideoOptions)}
    options = _video_options(video or VideoOptions(), {k: v for k, v in fields.items() if k in video_names})
    chosen = settings_for(preset, settings, {k: v for k, v in fields.items() if k not in video_names})
    chosen.blend_weights(len(styles))
    style_files = tuple(_file_of(s) or Path(f"<style {n}>") for n, s in enumerate(styles, 1))
    pictures = [_picture(style, f"style {n}") for n, style in enumerate(styles, 1)]
    job = Job("1", clip_file, style_files, chosen, output_path, video=options)
    problems = job.output_problems()
    if problems:
        raise SettingsError(problems)
    return door.clip(door.ClipSpec(job, tuple(pictures), resume), _weights.get(chosen.network_weights),
                     door.ClipHooks(progress=progress, cancel=cancel))  # fmt: skip


def settings_for(
    preset_name: str | os.PathLike[str] | None, base: Settings | None, fields: Mapping[str, Any]
) -> Settings:
    """The settings a call asks for: the preset's or ``base`` (else the defaults), then ``fields`` by name."""
    if base is not None and not isinstance(base, Settings):
        raise SettingsError(
            f"settings must be a Settings (a Stylized's .settings, say), got {_given(base)}; or give the fields by "
            "name (size=384, style_weight=10, ...)"
        )
    if preset_name is not None and base is not None:
        raise SettingsError("give a preset or settings to start from, not both")
    start = preset(preset_name) if preset_name is not None else base or DEFAULTS
    return from_fields(fields, base=start)  # read as the command line reads its options


def _given(value: object) -> str:
    """A value a call gave, as a refusal names it: ``5 (int)``, ``{'size': 64} (dict)``."""
    return f"{shown(value)} ({type(value).__name__})"


def _refuse(problems: list[str]) -> None:
    if problems:
        raise SettingsError(problems)


def _hook_problems(progress: object, cancel: object) -> list[str]:
    """What is wrong with a call's ``progress`` and ``cancel``, each named: said before the run, not from inside it."""
    problems = []
    if progress is not None and not callable(progress):
        problems.append(f"progress must be a function that hears each record, got {_given(progress)}")
    if cancel is not None and not isinstance(cancel, CancelToken):
        problems.append(f"cancel must be a CancelToken, got {_given(cancel)}")
    return problems


def _regions_problems(regions: object) -> list[str]:
    """A mask file is not taken for regions: it needs what each of its colours gets, as ``--regions`` needs its
    ``--region``s, and the door has no argument for that; the message says how to read one."""
    if regions is None or isinstance(regions, Regions):
        return []
    return [
        f"regions must be a Regions, got {_given(regions)}; read a mask with what each colour gets: "
        "style_studio.core.regions_from_mask(mask, [RegionSpec.parse('white=1')], style_count)[0]"
    ]


def _file_name(value: object, what: str, kind: str, refused: type[StyleStudioError] = SettingsError) -> str:
    """``value`` as the file's name it is, as typed (``refused`` naming it when it is none: None, a number, bytes,
    "")."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(text, str) or not text or "\0" in text:
        raise refused(f"{what} must be {kind} (a str or a Path), got {_given(value)}")
    return text


def _video_options(base: VideoOptions, fields: Mapping[str, Any]) -> VideoOptions:
    options = dataclasses.replace(base, **fields)
    problems = options.problems()
    if problems:
        raise SettingsError(problems)
    return options


def _file_of(source: PictureSource) -> Path | None:
    """The file a picture comes from: its name, or the file a PIL image was opened from (``image_file``): an input
    of the run, as a path would be, so that no output replaces it. None for pixels that came from no file.

    Made absolute now: a notebook that changes folder before it saves (``%cd``) still has its photo known.
    """
    named = Path(_file_name(source, "a picture", _PICTURE_KINDS, ImageLoadError)) if _is_name(source) else None
    if isinstance(source, Image.Image):
        named = image_file(source)
    return Path(os.path.abspath(named)) if named is not None else None


def _picture(source: PictureSource, name: str) -> Image.Image:
    if isinstance(source, (str, os.PathLike)):
        return load_image(_file_name(source, name, _PICTURE_KINDS, ImageLoadError))
    return picture_from(source, name)


_PICTURE_KINDS: Final = "a file's name, a PIL image or an array of pixels"


def _is_name(source: object) -> bool:
    return isinstance(source, (str, os.PathLike))


def _pictures(photo: PictureSource, styles: tuple[PictureSource, ...], regions: Regions | None) -> Pictures:
    sources = (photo, *styles)
    labels = ("photo", *(f"style {n}" for n in range(1, len(styles) + 1)))
    from_files = [_file_of(source) for source in sources]
    names = tuple(file.name if file is not None else label for file, label in zip(from_files, labels, strict=True))
    files = tuple(file for file in from_files if file is not None)
    content, *style_pictures = (_picture(source, label) for source, label in zip(sources, labels, strict=True))
    return Pictures(content, tuple(style_pictures), names, regions, files)
