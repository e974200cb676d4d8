"""``style-studio render``: one picture, resumable, written only when it is done."""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .. import __version__
from ..core import CANCELLED, FORMATS, CancelToken, Progress, Regions, RegionSpec, StyleStudioError, regions_from_mask
from ..core import settings as settings_mod
from .parser import UsageError, settings_from_args
from .terminal import DownloadBar, Reporter, signals_stop_the_render

if TYPE_CHECKING:
    from PIL import Image

    from ..core import CheckpointStore, LoadedWeights, Settings

EXIT_INTERRUPTED = 130


def _check_output(path: Path) -> None:
    if path.suffix.lower() not in FORMATS:
        raise UsageError(f"{path}: unknown output type {path.suffix or '(none)'}; use .png, .jpg, .webp or .tif")
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"{path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{path}: the folder {folder} is not writable")


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


def _run_id(output: Path) -> str:
    """A command-line run's checkpoint name: the same output file, the same run."""
    return "cli-" + hashlib.sha256(str(output.resolve()).encode()).hexdigest()[:16]


def render(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``style-studio render``; returns the exit status."""
    settings = settings_from_args(args)
    output = Path(args.output)
    _check_output(output)
    if args.bit_depth == 16 and output.suffix.lower() not in (".png", ".tif", ".tiff"):
        raise UsageError(f"{output}: 16-bit pictures can be saved as .png or .tif, not {output.suffix}")
    if args.dpi is not None and not 1 <= args.dpi <= 10_000:
        raise UsageError(f"--dpi must be from 1 to 10000, got {args.dpi:g}")
    progress_mode = args.progress or ("bar" if stderr.isatty() else "none")

    from ..core import imageio, weights

    content = imageio.load_image(args.content)
    styles = [imageio.load_image(path) for path in args.styles]
    painted = _regions(args, content.size, len(styles), stderr)

    bar = DownloadBar(stderr) if progress_mode == "bar" else None
    try:
        loaded = weights.load_weights(settings.weights, download=True, progress=bar)
    finally:
        if bar:
            bar.close()
    if loaded.untrained:
        stderr.write(f"style-studio: using {loaded.label}\n")

    from ..core import Busy, CheckpointStore

    store = CheckpointStore()
    run_id = _run_id(output)
    try:
        with store.claim(run_id):
            return _render_run(args, settings, content, styles, painted, loaded, store, run_id, stdout, stderr)
    except Busy:
        raise StyleStudioError(
            f"{output} is being rendered by another style-studio process; wait for it, or choose another -o"
        ) from None


def _render_run(
    args: argparse.Namespace,
    settings: Settings,
    content: Image.Image,
    styles: list[Image.Image],
    painted: Regions | None,
    loaded: LoadedWeights,
    store: CheckpointStore,
    run_id: str,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    """The run itself, its checkpoint held by this process: resume or replace it, render, write, discard it."""
    from ..core import StyleTransfer, imageio

    output = Path(args.output)
    progress_mode = args.progress or ("bar" if stderr.isatty() else "none")
    try:
        unfinished = store.load(run_id)
    except StyleStudioError:
        if args.resume:
            raise
        store.discard(run_id)  # damaged, and not asked for: a fresh run replaces it
        unfinished = None
    if args.resume and unfinished is None:
        stderr.write(f"style-studio: no unfinished run of {output} to resume; starting from the beginning\n")
    elif unfinished is not None and not args.resume:
        stderr.write(
            f"style-studio: replacing the unfinished run of {output} ({unfinished.describe()}); "
            "use --resume to go on with it instead\n"
        )
    cancel = CancelToken()
    transfer = StyleTransfer(
        content,
        styles,
        settings,
        loaded,
        cancel=cancel,
        preview_interval=float("inf"),
        checkpoints=store,
        run_id=run_id,
        resume=unfinished if args.resume else None,
        input_names=[Path(args.content).name, *(Path(p).name for p in args.styles)],
        regions=painted,
    )
    if args.resume and unfinished is not None:
        stderr.write(f"style-studio: resuming {unfinished.describe()}\n")
    reporter = Reporter(progress_mode, stdout, stderr)
    record: Progress | None = None
    try:
        with signals_stop_the_render(cancel, stderr):
            for record in transfer.run():
                reporter.show(record)
    except KeyboardInterrupt:
        cancel.cancel()
        record = None
    finally:
        reporter.close()
    if record is None or record.stop_reason == CANCELLED or transfer.result is None:
        stderr.write("style-studio: interrupted; nothing written. Run the same command with --resume to go on\n")
        return EXIT_INTERRUPTED
    metadata = settings_mod.dumps(
        settings,
        weights_label=loaded.label,
        app_version=__version__,
        content=Path(args.content).name,
        styles=[Path(p).name for p in args.styles],
        **({"regions": painted.to_json()} if painted else {}),
    )
    dpi = (args.dpi, args.dpi) if args.dpi else content.info.get("dpi")
    picture = transfer.result_array() if args.bit_depth == 16 else transfer.result
    assert picture is not None
    imageio.save_image(
        picture, output, metadata, software=f"Style Studio {__version__}", bit_depth=args.bit_depth, dpi=dpi
    )
    store.discard(run_id)  # the picture is written: nothing left to resume
    if progress_mode != "json":
        stderr.write(
            f"style-studio: wrote {output} ({transfer.result.width}×{transfer.result.height}, "
            f"{record.elapsed:.1f} s, {record.compute})\n"
        )
    return 0
