"""Many pictures: a batch of jobs, each a photo and its styles with settings, rendered and written once.

A job's output carries, with its settings, a *job key*: a hash of the
settings and of the input pictures' pixels. A job whose output already has
its key is skipped, so a batch that was killed is finished by running the
same command again. Rendering a job (``render_job``) needs only the inputs'
bytes and the weights, not their files: a worker on another machine can do
it (``batch`` runs jobs in this process, in a process pool, or on Ray); the
submitting process writes every output (``write_output``), atomically.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import tomllib
from PIL import Image

from .. import settings as settings_mod
from ..errors import SettingsError, StyleStudioError
from ..io.imageio import FORMATS, decode_image, read_metadata, save_image
from ..network.weights import identity as weights_identity
from ..run.checkpoints import image_hash
from ..settings import Settings

if TYPE_CHECKING:
    from ..progress import Progress
    from ..run.cancel import CancelToken
    from ..run.checkpoints import Checkpoint, CheckpointStore
    from ..run.compute import NetworkWeights

#: The metadata entry that says which job made an output.
JOB_KEY: Final = "job_key"
JOB_FILE_KEYS: Final = frozenset({"settings", "preset", "jobs"})
JOB_KEYS: Final = frozenset({"id", "content", "styles", "style", "settings", "output"})


class BatchError(StyleStudioError):
    """A batch that cannot start: every problem found, one per line."""

    def __init__(self, problems: Sequence[str], source: str | None = None) -> None:
        self.problems = list(problems)
        where = f"{source}: " if source else ""
        super().__init__(
            where + ("; ".join(self.problems) if len(self.problems) < 2 else "\n  " + "\n  ".join(self.problems))
        )


@dataclass(frozen=True)
class BatchJob:
    """One picture to make.

    Attributes:
        id: the job's name in progress records and the summary ("3", or the jobs file's).
        content: the photo.
        styles: its style images (blended by ``settings.style_blend``).
        settings: everything that decides the picture.
        output: the file to write (its format from the suffix).
    """

    id: str
    content: Path
    styles: tuple[Path, ...]
    settings: Settings
    output: Path

    def describe(self) -> str:
        return f"{self.content.name} × {' + '.join(s.name for s in self.styles)}"


@dataclass(frozen=True)
class JobInputs:
    """What a worker needs to render a job, in bytes: files travel without a shared folder.

    Attributes:
        key: the job key (``job_key``), worked out once where the files are read.
    """

    job: BatchJob
    content: bytes
    styles: tuple[bytes, ...]
    key: str = ""

    @classmethod
    def read(cls, job: BatchJob) -> JobInputs:
        """The job's files, read and keyed (OSError when one cannot be read, ImageLoadError when not a picture)."""
        inputs = cls(job, job.content.read_bytes(), tuple(p.read_bytes() for p in job.styles))
        content, styles = inputs.pictures()
        return dataclasses.replace(inputs, key=job_key(job.settings, content, styles))

    def pictures(self) -> tuple[Image.Image, list[Image.Image]]:
        """Decoded (ImageLoadError naming the file when one is not a picture)."""
        content = decode_image(self.content, self.job.content.name)
        styles = [decode_image(data, path.name) for data, path in zip(self.styles, self.job.styles, strict=True)]
        return content, styles


def job_key(settings: Settings, content: Image.Image, styles: Sequence[Image.Image]) -> str:
    """The job key: its settings, its weights file's contents and its pictures' pixels.

    The same picture in another format keys the same; another weights file at
    the same path keys differently.
    """
    digest = hashlib.sha256(json.dumps(settings_mod.to_dict(settings), sort_keys=True).encode())
    weights = weights_identity(settings.weights)
    if weights != settings.weights:  # a file's digest (the built-in choices key by name, as they always did)
        digest.update(weights.encode())
    for picture in (content, *styles):
        digest.update(image_hash(picture).encode())
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class RenderedJob:
    """A job's result, as a worker sends it back.

    Attributes:
        pixels: (H, W, 3) uint8.
        metadata: the settings document to embed (with the job key).
        seconds: how long the render took.
        compute: where it ran ("cpu, fp32", ...).
    """

    job_id: str
    pixels: np.ndarray
    metadata: str
    seconds: float
    compute: str


def render_job(
    inputs: JobInputs,
    weights: NetworkWeights,
    *,
    cancel: CancelToken | None = None,
    progress: Callable[[Progress], None] | None = None,
    app_version: str = "",
    checkpoints: CheckpointStore | None = None,
) -> RenderedJob:
    """Render one job in this process, going on from its checkpoint in ``checkpoints`` when a killed batch left one.

    The checkpoint is named after the job key (the same job in any batch)
    and removed once the job is rendered.

    Raises:
        StyleStudioError: a picture that cannot be read, settings that do not fit it, out of memory.
        Cancelled: ``cancel`` was set (nothing is returned; the checkpoint is kept).
    """
    from ..errors import Cancelled
    from ..progress import CANCELLED
    from ..run.engine import StyleTransfer

    started = time.perf_counter()
    job = inputs.job
    content, styles = inputs.pictures()
    key = inputs.key or job_key(job.settings, content, styles)
    run_id = f"batch-{key}"
    resume = _unfinished(checkpoints, run_id)
    transfer_from = functools.partial(
        StyleTransfer, content, styles, job.settings, weights, cancel=cancel, preview_interval=math.inf,
        checkpoints=checkpoints, run_id=run_id, input_names=(job.content.name, *(p.name for p in job.styles)),
    )  # fmt: skip
    try:
        transfer = transfer_from(resume=resume)
    except StyleStudioError:
        if resume is None or checkpoints is None:
            raise
        checkpoints.discard(run_id)  # it cannot be gone on from (damaged): the job starts again
        transfer = transfer_from(resume=None)
    last = None
    for record in transfer.run():
        last = record
        if progress is not None:
            progress(record)
    if last is None or last.stop_reason == CANCELLED or transfer.result is None:
        raise Cancelled()
    metadata = settings_mod.dumps(
        job.settings,
        weights_label=weights.label,
        app_version=app_version,
        content=job.content.name,
        styles=[p.name for p in job.styles],
        **{JOB_KEY: key},
    )
    pixels = np.asarray(transfer.result, dtype=np.uint8)
    if checkpoints is not None:
        checkpoints.discard(run_id)
    return RenderedJob(job.id, pixels, metadata, time.perf_counter() - started, last.compute)


def _unfinished(checkpoints: CheckpointStore | None, run_id: str) -> Checkpoint | None:
    if checkpoints is None:
        return None
    try:
        return checkpoints.load(run_id, read_state=False)
    except StyleStudioError:
        return None  # damaged or from a newer version: the job starts again (and a new save replaces it)


def write_output(job: BatchJob, rendered: RenderedJob, software: str) -> None:
    """Write a rendered job to its output, atomically (ImageSaveError when it cannot be)."""
    save_image(Image.fromarray(rendered.pixels), job.output, rendered.metadata, software=software)


def already_done(job: BatchJob, key: str) -> bool:
    """Whether the job's output exists and was made by this job (same settings and pictures)."""
    if not job.output.is_file():
        return False
    try:
        text = read_metadata(job.output)
        return text is not None and json.loads(text).get(JOB_KEY) == key
    except (StyleStudioError, ValueError, AttributeError):
        return False


def remove_partial_files(folders: Iterable[Path]) -> list[Path]:
    """Remove the temporary files a killed batch left while writing (``files.write_atomically``'s ``.*.part``)."""
    removed = []
    for folder in set(folders):
        for part in folder.glob(".*.part") if folder.is_dir() else ():
            part.unlink(missing_ok=True)
            removed.append(part)
    return removed


# -- making the jobs -----------------------------------------------------------------------


def jobs_from_arguments(
    photos: Sequence[Path], styles: Sequence[Path], outdir: Path, settings: Settings, suffix: str = ".png"
) -> list[BatchJob]:
    """Every photo with every style: ``{photo}-{style}{suffix}`` in ``outdir``."""
    jobs: list[BatchJob] = []
    for photo in photos:
        for style in styles:
            output = outdir / f"{photo.stem}-{style.stem}{suffix}"
            jobs.append(BatchJob(str(len(jobs) + 1), photo, (style,), settings, output))
    return jobs


def jobs_from_file(path: Path, outdir: Path, base: Settings) -> list[BatchJob]:
    """The jobs a TOML or JSON jobs file lists (format in the README), checked whole.

    Paths in the file are relative to its folder; outputs to ``outdir``.

    Raises:
        BatchError: every problem in the file, each naming its job.
    """
    source = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchError([f"cannot be read ({exc})"], source) from None
    try:
        document = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise BatchError(
            [f"not valid {'TOML' if path.suffix.lower() == '.toml' else 'JSON'} ({exc})"], source
        ) from None
    if not isinstance(document, dict):
        raise BatchError(["expected a table (object) with a list of jobs"], source)
    problems = [f"unknown entry {k!r}" for k in sorted(set(document) - JOB_FILE_KEYS)]
    folder = path.parent
    settings = base
    preset = document.get("preset")
    if preset is not None:
        try:
            settings = settings_mod.loads((folder / str(preset)).read_bytes(), source=str(preset))
        except OSError as exc:
            problems.append(f"the preset {preset} cannot be read ({exc.strerror or exc})")
        except SettingsError as exc:
            problems.append(str(exc))
    overrides = document.get("settings", {})
    settings = _with_overrides(settings, overrides, "the file's settings", problems)
    entries = document.get("jobs")
    if not isinstance(entries, list) or not entries:
        problems.append("no jobs: give a list of jobs, each with a content photo and its styles")
        entries = []
    jobs = []
    for number, entry in enumerate(entries, start=1):
        job = _job_from_entry(entry, number, folder, outdir, settings, problems)
        if job is not None:
            jobs.append(job)
    if problems:
        raise BatchError(problems, source)
    return jobs


def _with_overrides(settings: Settings, overrides: object, where: str, problems: list[str]) -> Settings:
    if not overrides:
        return settings
    if not isinstance(overrides, Mapping):
        problems.append(f"{where}: settings must be a table of names and values")
        return settings
    try:
        return settings_mod.from_dict(dict(overrides), base=settings)
    except SettingsError as exc:
        problems.extend(f"{where}: {p}" for p in exc.problems)
        return settings


def _job_from_entry(
    entry: object, number: int, folder: Path, outdir: Path, settings: Settings, problems: list[str]
) -> BatchJob | None:
    if not isinstance(entry, Mapping):
        problems.append(f"job {number}: expected a table with content and styles")
        return None
    name = str(entry.get("id", number))
    where = f"job {name}"
    problems.extend(f"{where}: unknown entry {k!r}" for k in sorted(set(entry) - JOB_KEYS))
    content = entry.get("content")
    styles: Any = entry.get("styles", [entry["style"]] if "style" in entry else None)
    if not isinstance(content, str) or not content:
        problems.append(f"{where}: no content photo")
        return None
    if isinstance(styles, str):
        styles = [styles]
    if not isinstance(styles, list) or not styles or not all(isinstance(s, str) for s in styles):
        problems.append(f'{where}: no style images (give styles = ["painting.jpg", ...])')
        return None
    job_settings = _with_overrides(settings, entry.get("settings"), where, problems)
    content_path = folder / content
    style_paths = tuple(folder / s for s in styles)
    output_name = entry.get("output", f"{content_path.stem}-{style_paths[0].stem}.png")
    if not isinstance(output_name, str) or Path(output_name).suffix.lower() not in FORMATS:
        problems.append(f"{where}: the output {output_name!r} needs a .png, .jpg, .webp or .tif name")
        return None
    return BatchJob(name, content_path, style_paths, job_settings, outdir / output_name)


def check_jobs(jobs: Sequence[BatchJob], outdir: Path) -> None:
    """Raise BatchError listing every problem that would make jobs fail, or write where they must not.

    Every output must be inside ``outdir`` (after following links: a jobs file
    cannot write elsewhere) and none may be one of the batch's input pictures.
    """
    problems = []
    seen: dict[Path, str] = {}
    ids: set[str] = set()
    folder = outdir.resolve()
    inputs = {path.resolve() for job in jobs for path in (job.content, *job.styles)}
    for job in jobs:
        output = job.output.resolve()
        if output.parent != folder and folder not in output.parents:
            problems.append(f"job {job.id}: its output {job.output} is outside the output folder {outdir}")
        elif output in inputs:
            problems.append(f"job {job.id}: its output {job.output} is one of the batch's input pictures")
        if job.id in ids:
            problems.append(f"job {job.id}: another job has the same id")
        ids.add(job.id)
        for path in (job.content, *job.styles):
            if not path.is_file():
                problems.append(f"job {job.id}: {path} does not exist")
        if output in seen:
            problems.append(f"job {job.id}: writes {job.output.name}, as job {seen[output]} does")
        seen[output] = job.id
        if job.settings.style_blend and len(job.settings.style_blend) != len(job.styles):
            problems.append(
                f"job {job.id}: {len(job.settings.style_blend)} style blend weights for {len(job.styles)} styles"
            )
    if problems:
        raise BatchError(problems)


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended: ``status`` is "done", "skipped", "failed" or "cancelled"."""

    job: BatchJob
    status: str
    reason: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job.id,
            "status": self.status,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "output": str(self.job.output),
        }


def summary_rows(outcomes: Sequence[JobOutcome]) -> list[list[str]]:
    """The summary table: one row per job."""
    return [
        [o.job.id, o.job.describe(), o.job.output.name, o.status, f"{o.seconds:.1f}" if o.seconds else "", o.reason]
        for o in outcomes
    ]
