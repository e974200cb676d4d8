"""``style-studio render``: one picture, resumable, written only when it is done."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .. import __version__
from ..core import (
    Cancelled,
    CancelToken,
    Job,
    PicturePixels,
    PreviewFolder,
    Previews,
    Regions,
    RegionSpec,
    StyleStudioError,
    is_video_path,
    load_image,
    path_key,
    picture_output_refusal,
    regions_from_mask,
)
from .parser import UsageError, preset_base, settings_from_args
from .terminal import Reporter, load_weights_shown, signals_stop_the_render

if TYPE_CHECKING:
    from ..core import Checkpoint, CheckpointStore, JobInputs, LoadedWeights, Progress

EXIT_INTERRUPTED = 130


def _check_output(job: Job, named: str) -> None:
    """Refuse ``-o`` (typed as ``named``) by the check ``Stylized.save`` makes too."""
    refusal = picture_output_refusal(job.target(), named, bit_depth=job.bit_depth, dpi=job.dpi)
    if refusal is not None:
        raise UsageError(refusal)


def _regions(args: argparse.Namespace, size: tuple[int, int], style_count: int, stderr: IO[str]) -> Regions | None:
    """The regions ``--regions`` and ``--region`` describe, fitted to the photo's ``size``; None without them."""
    if args.regions is None:
        if args.region:
            raise UsageError("--region says what a colour of the --regions mask gets: give the mask with --regions")
        return None
    specs = [RegionSpec.parse(text, style_count) for text in args.region]
    painted, notice = regions_from_mask(args.regions, specs, style_count, size)
    if notice:
        stderr.write(f"style-studio: {notice}\n")
    return painted


def _preview_folder(args: argparse.Namespace, job: Job, stderr: IO[str]) -> PreviewFolder | None:
    """The folder ``--previews`` names, checked; None without it."""
    if args.previews is None:
        return None
    if not args.preview_every >= 0:
        raise UsageError(f"--preview-every must be 0 or more seconds, got {args.preview_every}")

    def tell(message: str) -> None:
        stderr.write(f"style-studio: {message}\n")

    folder = PreviewFolder(Path(args.previews), job.inputs, outputs=(job.output,), going_on=args.resume, tell=tell)
    problems = folder.problems()
    if problems:
        raise UsageError(problems[0])
    return folder


def _run_id(output: Path) -> str:
    """A command-line run's checkpoint name: the same output file, the same run."""
    return "cli-" + hashlib.sha256(path_key(output).encode()).hexdigest()[:16]


def render(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``style-studio render``; returns the exit status."""
    if is_video_path(args.content):
        raise UsageError(
            f"{args.content} is a video: style it with `style-studio video {args.content} STYLE... -o OUT.mp4`"
        )
    settings = settings_from_args(args, preset_base(args))
    output = Path(args.output)
    job = Job("1", Path(args.content), tuple(Path(p) for p in args.styles), settings, output,
              bit_depth=args.bit_depth, dpi=args.dpi, mask=Path(args.regions) if args.regions else None)  # fmt: skip
    _check_output(job, args.output)
    previews = _preview_folder(args, job, stderr)
    progress_mode = args.progress or ("bar" if stderr.isatty() else "none")

    content = load_image(args.content)  # each picture's problem, named, before anything runs
    for path in args.styles:
        load_image(path)
    job = dataclasses.replace(job, regions=_regions(args, content.size, len(args.styles), stderr))

    loaded = load_weights_shown(settings.network_weights, progress_mode, stderr)

    from ..core import Busy, CheckpointStore, JobInputs

    store = CheckpointStore()
    run_id = _run_id(output)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(store.claim(run_id))
        except Busy:  # this lock's alone: the previews folder's says itself what is busy
            raise StyleStudioError(
                f"{output} is being rendered by another style-studio process; wait for it, or choose another -o"
            ) from None
        unfinished, told = _unfinished(args, store, run_id, stderr)
        resume = unfinished if args.resume else None
        inputs = JobInputs.read(job)
        if previews is not None:
            # Judged once it is known which run goes on (previews there must be that run's), held while it runs.
            identity = f"{run_id}:{inputs.key}"  # the same run of the same job: another output is another run
            held.enter_context(previews.claim(identity, resume.position.step if resume is not None else None))
        if args.resume and unfinished is None and not told:
            stderr.write(f"style-studio: no unfinished run of {output} to resume; starting from the beginning\n")
        elif unfinished is not None and not args.resume:
            stderr.write(
                f"style-studio: replacing the unfinished run of {output} ({unfinished.describe()}); "
                "use --resume to go on with it instead\n"
            )
        return _render_run(args, inputs, loaded, store, run_id, resume, previews, stdout, stderr)


def _unfinished(
    args: argparse.Namespace, store: CheckpointStore, run_id: str, stderr: IO[str]
) -> tuple[Checkpoint | None, bool]:
    """The run's checkpoint, if it has one that can be read, and whether the user was told of one that cannot."""
    from ..core import NewerCheckpointError

    notices: list[str] = []  # one that cannot be read is set aside (never deleted), and a fresh run starts
    try:
        unfinished = store.load(run_id, tell=notices.append)
    except NewerCheckpointError as exc:
        if args.resume:
            raise
        notices.append(store.set_aside(run_id, exc))  # not asked for: kept aside, never deleted
        unfinished = None
    for notice in notices:
        stderr.write(f"style-studio: {notice}; starting from the beginning\n")
    return unfinished, bool(notices)


def _render_run(
    args: argparse.Namespace,
    inputs: JobInputs,
    loaded: LoadedWeights,
    store: CheckpointStore,
    run_id: str,
    resume: Checkpoint | None,
    previews: PreviewFolder | None,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    """The run itself, its checkpoint (and previews folder) held by this process: render, write, discard it."""
    from ..core import door, write_output

    job = inputs.job
    output = job.output
    progress_mode = args.progress or ("bar" if stderr.isatty() else "none")

    def started() -> None:
        if resume is not None:
            stderr.write(f"style-studio: resuming {resume.describe()}\n")

    cancel = CancelToken()
    reporter = Reporter(progress_mode, stdout, stderr)

    def progress(record: Progress) -> None:
        if previews is not None:
            previews.keep(record)
        reporter.show(record)

    try:
        with signals_stop_the_render(cancel, stderr):
            rendered = door.job(
                dataclasses.replace(inputs, run_id=run_id, resume=resume), loaded,
                door.JobHooks(cancel=cancel, progress=progress, started=started, checkpoints=store,
                              previews=Previews(args.preview_every) if previews is not None else Previews(),
                              keep_checkpoint=True, app_version=__version__),
            )  # fmt: skip
    except (KeyboardInterrupt, Cancelled):
        cancel.cancel()
        stderr.write("style-studio: interrupted; nothing written. Run the same command with --resume to go on\n")
        return EXIT_INTERRUPTED
    finally:
        reporter.close()
    write_output(job, rendered, software=f"Style Studio {__version__}")
    store.discard(run_id)  # the picture is written: nothing left to resume
    if progress_mode != "json":
        made = rendered.made
        size = f"{made.pixels.shape[1]}×{made.pixels.shape[0]}, " if isinstance(made, PicturePixels) else ""
        stderr.write(f"style-studio: wrote {output} ({size}{rendered.seconds:.1f} s, {rendered.compute})\n")
    return 0
