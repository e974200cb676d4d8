"""Many pictures: a batch of jobs (``job.Job``), from the command line's photos and styles or a jobs file.

A job whose output already carries its job key is skipped, so a batch that
was killed is finished by running the same command again. Rendering a job
(``door.job``) needs only the inputs' bytes and the weights, not their
files: a worker on another machine can do it (``batch`` runs jobs in this
process, in a process pool, or on Ray); the submitting process writes every
output (``render.write_output``), through its guarded output.

Pictures that start from the tuned look (``init`` "tuned") in one painting share one look (``LookGroup``): the
batch tunes it once, on their photos, before the first of them is painted, and hands it to each.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .. import settings as settings_mod
from ..errors import SettingsError, StyleStudioError
from ..io.files import path_key, sweep_temporaries
from ..io.imageio import FORMATS
from ..io.outputs import FileIndex, names_a_folder
from ..io.video import OUTPUT_KINDS, is_video_path
from ..objective.masks import RegionSpec, regions_from_mask
from ..objective.regions import Regions
from ..progress import Failed, Finished, Outcome, Stopped
from ..settings import Settings
from .job import Job, VideoOptions, free_name, made_by_style_studio

if TYPE_CHECKING:
    from collections.abc import Hashable

#: A video's output in a batch, unless a jobs file names another.
VIDEO_SUFFIX: Final = ".mp4"
JOB_FILE_KEYS: Final = frozenset({"settings", "preset", "jobs"})
JOB_KEYS: Final = frozenset({"id", "content", "styles", "style", "settings", "output", "regions", "region", "video"})
#: What a video's job may say of its frames in a jobs file (``video = {frame_iterations = 40, ...}``).
VIDEO_KEYS: Final = frozenset(f.name for f in dataclasses.fields(VideoOptions))


class BatchError(StyleStudioError):
    """A batch that cannot start: every problem found, one per line."""

    def __init__(self, problems: Sequence[str], source: str | None = None) -> None:
        self.problems = list(problems)
        where = f"{source}: " if source else ""
        super().__init__(
            where + ("; ".join(self.problems) if len(self.problems) < 2 else "\n  " + "\n  ".join(self.problems))
        )


def remove_partial_files(folders: Iterable[Path]) -> list[Path]:
    """Remove the temporary files a killed batch left while writing (``files.sweep_temporaries``: only ours,
    and only those whose writer is gone)."""
    return [part for folder in set(folders) for part in sweep_temporaries(folder)]


# -- making the jobs -----------------------------------------------------------------------


@dataclass(frozen=True)
class OutputOptions:
    """How a batch writes its pictures: bits per channel and print resolution (None: each photo's own);
    and how its videos' frames are made (a video's output is an .mp4 unless a jobs file names another)."""

    bit_depth: int = 8
    dpi: float | None = None
    video: VideoOptions = field(default_factory=VideoOptions)


def jobs_from_arguments(
    photos: Sequence[Path],
    styles: Sequence[Path],
    outdir: Path,
    settings: Settings,
    suffix: str = ".png",
    options: OutputOptions = OutputOptions(),
) -> list[Job]:
    """Every photo with every style: ``{photo}-{style}{suffix}`` in ``outdir`` (a video's: ``.mp4``)."""
    jobs: list[Job] = []
    for photo in photos:
        video = options.video if is_video_path(photo) else None
        for style in styles:
            output = outdir / f"{photo.stem}-{style.stem}{VIDEO_SUFFIX if video else suffix}"
            if video is not None:
                jobs.append(Job(str(len(jobs) + 1), photo, (style,), settings, output, video=video, within=outdir,
                                generated_name=True))  # fmt: skip
                continue
            jobs.append(Job(str(len(jobs) + 1), photo, (style,), settings, output, None, options.bit_depth,
                            options.dpi, within=outdir, generated_name=True))  # fmt: skip
    return jobs


def free_generated_names(jobs: Sequence[Job]) -> tuple[list[Job], list[str]]:
    """The jobs, each whose output's name Style Studio made up moved to a free name where the name it made up is a
    file of the user's (not one a job of ours wrote) or another job's output; and a line for the user about each.

    A picture of ours under the name keeps it: the job is then skipped (made already) or replaces it. So a batch
    run again finds the names it chose before.
    """
    claimed = {path_key(job.output) for job in jobs if not job.generated_name}
    freed: list[Job] = []
    notices: list[str] = []

    def taken(path: Path) -> bool:
        if path_key(path) in claimed:
            return True
        return os.path.lexists(path) and not (path.is_file() and made_by_style_studio(path))

    for job in jobs:
        if job.generated_name:
            output = free_name(job.output, taken)
            if output != job.output:
                whose = "another job's" if path_key(job.output) in claimed else "a file Style Studio did not make"
                notices.append(f"job {job.id}: {job.output.name} is {whose}; writing {output.name} instead")
                job = dataclasses.replace(job, output=output)
        claimed.add(path_key(job.output))
        freed.append(job)
    return freed, notices


def jobs_from_file(path: Path, outdir: Path, base: Settings, options: OutputOptions = OutputOptions()) -> list[Job]:
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
    if preset is not None and _path_problem(preset, "the preset"):
        problems.append(_path_problem(preset, "the preset") or "")
    elif preset is not None:
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
        job = _job_from_entry(entry, number, folder, outdir, settings, problems, options)
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
    entry: object,
    number: int,
    folder: Path,
    outdir: Path,
    settings: Settings,
    problems: list[str],
    options: OutputOptions,
) -> Job | None:
    if not isinstance(entry, Mapping):
        problems.append(f"job {number}: expected a table with content and styles")
        return None
    name = entry.get("id", number)
    if isinstance(name, bool) or not isinstance(name, str | int) or not str(name).strip() or "\0" in str(name):
        problems.append(f"job {number}: its id must be a name or a number, got {name!r}")
        return None
    name = str(name)
    where = f"job {name}"
    problems.extend(f"{where}: unknown entry {k!r}" for k in sorted(set(entry) - JOB_KEYS))
    content = entry.get("content")
    styles: Any = entry.get("styles", [entry["style"]] if "style" in entry else None)
    if not isinstance(content, str) or not content:
        problems.append(f"{where}: no content photo")
        return None
    if isinstance(styles, str):
        styles = [styles]
    if not isinstance(styles, list) or not styles or not all(isinstance(s, str) and s for s in styles):
        problems.append(f'{where}: no style images (give styles = ["painting.jpg", ...])')
        return None
    for text in [content, *styles, *([entry["output"]] if isinstance(entry.get("output"), str) else [])]:
        problem = _path_problem(text, f"{where}: the file name")
        if problem:
            problems.append(problem)
            return None
    if isinstance(entry.get("output"), str) and names_a_folder(entry["output"]):
        problems.append(f"{where}: the output {entry['output']!r} ends with a separator, so it names a folder; "
                        "give the file's name")  # fmt: skip
        return None
    job_settings = _with_overrides(settings, entry.get("settings"), where, problems)
    content_path = folder / content
    style_paths = tuple(folder / s for s in styles)
    if is_video_path(content_path) or "video" in entry:
        return _video_job(entry, name, content_path, style_paths, job_settings, outdir, problems, options)
    output_name = entry.get("output", f"{content_path.stem}-{style_paths[0].stem}.png")
    if not isinstance(output_name, str) or Path(output_name).suffix.lower() not in FORMATS:
        problems.append(f"{where}: the output {output_name!r} needs a .png, .jpg, .webp or .tif name")
        return None
    regions = _regions_of(entry, folder, len(style_paths), where, problems)
    mask = folder / entry["regions"] if regions is not None else None
    return Job(name, content_path, style_paths, job_settings, outdir / output_name, regions, options.bit_depth,
               options.dpi, mask=mask, within=outdir, generated_name="output" not in entry)  # fmt: skip


def _video_job(
    entry: Mapping[str, Any],
    name: str,
    clip: Path,
    styles: tuple[Path, ...],
    settings: Settings,
    outdir: Path,
    problems: list[str],
    options: OutputOptions,
) -> Job | None:
    """A jobs file's video: ``video = {frame_iterations = 40, temporal_weight = 1, start = 2, duration = 5}``."""
    where = f"job {name}"
    given = entry.get("video", {})
    if not isinstance(given, Mapping):
        problems.append(f"{where}: video must be a table of {', '.join(sorted(VIDEO_KEYS))}")
        return None
    problems.extend(f"{where}: unknown video entry {k!r}" for k in sorted(set(given) - VIDEO_KEYS))
    if "regions" in entry or "region" in entry:
        problems.append(f"{where}: regions are for pictures; a video's job cannot have them")
    video = dataclasses.replace(options.video, **{k: v for k, v in given.items() if k in VIDEO_KEYS})
    video_problems = video.problems()
    if video_problems:
        problems.extend(f"{where}: video {problem}" for problem in video_problems)
        return None
    if not is_video_path(clip):
        problems.append(f"{where}: {clip.name} is not a video; a video table is for video clips")
    output_name = entry.get("output", f"{clip.stem}-{styles[0].stem}{VIDEO_SUFFIX}")
    if not isinstance(output_name, str) or Path(output_name).suffix.lower() not in OUTPUT_KINDS:
        problems.append(f"{where}: the output {output_name!r} needs a {', '.join(sorted(OUTPUT_KINDS))} name")
        return None
    return Job(name, clip, styles, settings, outdir / output_name, video=video, within=outdir,
               generated_name="output" not in entry)  # fmt: skip


def _regions_of(
    entry: Mapping[str, Any], folder: Path, style_count: int, where: str, problems: list[str]
) -> Regions | None:
    """A job's ``regions = "MASK.png"`` and ``region = ["COLOUR=STYLE[:STRENGTH]", ...]``, as --regions/--region."""
    mask, specs = entry.get("regions"), entry.get("region", [])
    if isinstance(specs, str):
        specs = [specs]
    if mask is None:
        if specs:
            problems.append(f"{where}: region says what a colour of the regions mask gets: give the mask as regions")
        return None
    if not isinstance(mask, str) or not isinstance(specs, list) or not all(isinstance(t, str) for t in specs):
        problems.append(f'{where}: give regions = "MASK.png" and region = ["COLOUR=STYLE[:STRENGTH]", ...]')
        return None
    problem = _path_problem(mask, f"{where}: the regions mask")
    if problem:
        problems.append(problem)
        return None
    try:
        parsed = [RegionSpec.parse(text, style_count) for text in specs]
        return regions_from_mask(folder / mask, parsed, style_count)[0]
    except StyleStudioError as exc:
        problems.append(f"{where}: {exc}")
        return None


def _path_problem(text: object, what: str) -> str | None:
    """Why a jobs file's ``text`` cannot name a file (not text, empty, a NUL byte); None: it can."""
    if not isinstance(text, str) or not text.strip():
        return f"{what} must be a file name, got {text!r}"
    if "\0" in text:
        return f"{what} {text!r} holds a NUL character, which no file name can"
    return None


def check_jobs(jobs: Sequence[Job], outdir: Path) -> None:
    """Raise BatchError listing every problem that would make jobs fail, or write where they must not.

    Every output must be inside ``outdir`` (after following links: a jobs file
    cannot write elsewhere; checked again when each is written) and none may
    be one of the batch's inputs, of its own job or of another.
    """
    problems = []
    seen: dict[str, str] = {}
    ids: set[str] = set()
    inputs = FileIndex(path for job in jobs for path in job.inputs)
    for job in jobs:
        job = dataclasses.replace(job, within=job.within or outdir)
        output = path_key(job.output)  # one file, whatever its case on a disk that ignores case
        other = inputs.find(job.output)
        if other is not None and other not in job.inputs:  # its own inputs: output_problems says so
            problems.append(f"job {job.id}: its output {job.output} is another job's input ({other.name})")
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
        problems.extend(f"job {job.id}: {problem}" for problem in job.output_problems())
        if job.regions is not None:
            try:
                job.regions.check(len(job.styles))
            except StyleStudioError as exc:
                problems.append(f"job {job.id}: {exc}")
    if problems:
        raise BatchError(problems)


@dataclass(frozen=True, eq=False)
class LookGroup:
    """A batch's pictures in one painting whose settings tune the look alike: one look, tuned on their photos.

    Attributes:
        jobs: the pictures' jobs, in the batch's order (each with the same styles and tuning settings).
    """

    jobs: tuple[Job, ...]

    @property
    def photos(self) -> tuple[Path, ...]:
        """The photos the look learns from: at most ``tuning.MOST_PHOTOS`` of the pictures', spread over them."""
        from ..run.tuning import spread

        photos = list(dict.fromkeys(job.content for job in self.jobs))
        return tuple(photos[index] for index in spread(len(photos)))

    @property
    def styles(self) -> tuple[Path, ...]:
        return self.jobs[0].styles

    @property
    def settings(self) -> Settings:
        return self.jobs[0].settings


def look_groups(jobs: Sequence[Job]) -> list[LookGroup]:
    """The batch's pictures that start from the tuned look, grouped by their paintings (the files) and the settings
    the tuning reads (``settings.TUNING_FIELDS``, and the blend), in the order of each group's first job. A
    video's job tunes its own look, on its frames."""
    from ..settings import TUNING_FIELDS

    groups: dict[Hashable, list[Job]] = {}
    for job in jobs:
        settings = job.settings
        if job.video is None and settings.tunes:
            tuning = tuple(getattr(settings, name) for name in TUNING_FIELDS)
            key = (tuple(path_key(style) for style in job.styles), settings.style_blend, tuning)
            groups.setdefault(key, []).append(job)
    return [LookGroup(tuple(group)) for group in groups.values()]


#: The words a batch's summary and ``--progress json`` say of how a job ended, in the summary's order.
JOB_WORDS: Final = ("done", "skipped", "failed", "cancelled")


@dataclass(frozen=True)
class JobOutcome:
    """How a batch's job ended (made, made before, failed or stopped), and what there is to say of it.

    Attributes:
        outcome: ``Finished`` (``made_before``: skipped, its output already made), ``Stopped``, or ``Failed`` with
            the error.
        note: what made it and where (a finished job's), why it was skipped or stopped; a failure says its error.
    """

    job: Job
    outcome: Outcome
    note: str = ""
    seconds: float = 0.0

    @property
    def status(self) -> str:
        """Its word in the summary and the JSON records: done, skipped, failed or cancelled."""
        match self.outcome:
            case Finished(made_before=True):
                return "skipped"
            case Finished():
                return "done"  # where a run's record says "finished"
            case Failed() | Stopped():
                return self.outcome.word

    @property
    def reason(self) -> str:
        """Why it failed, or its note."""
        return self.outcome.error if isinstance(self.outcome, Failed) else self.note

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
