"""Command line: ``style-studio`` opens the window, ``style-studio render`` works headless.

Bad input ends with exit status 2 and one line on stderr saying what is
wrong; nothing is written at the output path unless the run succeeds.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, NoReturn

from . import __version__
from .core import (
    CANCELLED,
    FORMATS,
    CancelToken,
    Progress,
    Regions,
    RegionSpec,
    StyleStudioError,
    folder_lock,
    held,
    regions_from_mask,
)
from .core import settings as settings_mod

if TYPE_CHECKING:
    from PIL import Image
    from tqdm import tqdm

    from .core import BatchJob, CheckpointStore, LoadedWeights, Settings

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad command-line input; its message is the one line printed."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="style-studio", description="Neural style transfer: a desktop app, and a headless renderer for scripts."
    )
    parser.add_argument("--version", action="version", version=f"style-studio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    gui = sub.add_parser("gui", help="open the window (the default)")
    gui.add_argument("content", nargs="?", help="content image to open")
    gui.add_argument("styles", nargs="*", help="style images to open")

    r = sub.add_parser(
        "render",
        help="stylise an image without opening a window",
        description="Stylise CONTENT with one or more STYLE images and write OUT.",
    )
    r.add_argument("content", metavar="CONTENT", help="the photo to stylise")
    r.add_argument("styles", metavar="STYLE", nargs="+", help="one or more style images")
    r.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        required=True,
        help="output file: .png, .jpg, .webp or .tif (settings are embedded)",
    )
    r.add_argument("--style-blend", metavar="W1,W2", help="blend weight of each style image")
    r.add_argument(
        "--regions",
        metavar="MASK",
        help="a mask picture of where each style goes: colour-coded (one colour per region, black or any "
        "other colour unpainted), or greyscale for one region; say what each colour gets with --region",
    )
    r.add_argument(
        "--region",
        metavar="COLOUR=STYLE[:STRENGTH]",
        action="append",
        default=[],
        help="what a colour of --regions gets: a style's number (from 1) and a strength, or 'keep' to keep "
        "the photo there, e.g. --region red=1 --region '#00ff00=2:0.5' --region white=keep (repeatable)",
    )
    r.add_argument(
        "--bit-depth",
        type=int,
        choices=(8, 16),
        default=8,
        help="bits per channel of the output: 16 keeps the finest gradations, for print (.png and .tif)",
    )
    r.add_argument(
        "--dpi",
        type=float,
        default=None,
        help="print resolution recorded in the output (default: the photo's own, else 72)",
    )
    _add_settings_options(r)
    r.add_argument(
        "--progress",
        choices=("bar", "json", "none"),
        default=None,
        help="bar (default on a terminal), json (one object per iteration on stdout), none",
    )
    r.add_argument(
        "--resume",
        action="store_true",
        help="go on with the unfinished run of the same OUT (after a crash, a kill or Ctrl+C) "
        "where its last checkpoint stood; refused if the inputs or settings changed",
    )
    r.add_argument("-v", "--verbose", action="store_true", help="log what happens")

    b = sub.add_parser(
        "batch",
        help="render many pictures: every photo with every style, or the jobs of a jobs file",
        description="Render every PHOTO with every --style image (or the jobs of --jobs) into OUTDIR. Outputs "
        "already made with the same settings and pictures are skipped: run the same command again to finish "
        "an interrupted batch.",
    )
    b.add_argument("photos", metavar="PHOTO", nargs="*", help="photos to stylise")
    b.add_argument(
        "--style", dest="batch_styles", metavar="STYLE", nargs="+", action="extend", default=[],
        help="style images: each photo is rendered with each of them",
    )  # fmt: skip
    b.add_argument("--jobs", metavar="FILE", help="a TOML or JSON jobs file (see the README) instead of photos")
    b.add_argument("-o", "--output", metavar="OUTDIR", required=True, help="the folder outputs go to (made if missing)")
    b.add_argument("--format", choices=("png", "jpg", "webp", "tif"), default="png", help="of the outputs named here")
    b.add_argument("--preset", metavar="FILE", help="settings from a preset saved by the window (options override it)")
    b.add_argument("--workers", type=int, default=1, help="jobs at once on this machine, each in its own process")
    b.add_argument(
        "--ray", metavar="auto|ADDRESS",
        help="run each job as a task on a Ray cluster (auto: the one `ray start` joined this machine to)",
    )  # fmt: skip
    b.add_argument("--progress", choices=("bar", "json", "none"), default=None)
    _add_settings_options(b)
    b.set_defaults(**dict.fromkeys(SETTINGS_OPTIONS))
    return parser


#: The settings options' destinations (``batch`` sets them all to None: only those typed override a preset).
SETTINGS_OPTIONS: Final = (
    "size", "iterations", "scales", "finer_iterations", "tile", "optimizer", "init", "content_layers",
    "style_layers", "content_weight", "style_weight", "tv_weight", "style_scale", "preserve_colors", "pooling",
    "seed", "step_size", "device", "precision", "nondeterministic", "weights",
)  # fmt: skip


def _add_settings_options(r: argparse.ArgumentParser) -> None:
    """The options that make a run's Settings, shared by ``render`` and ``batch``."""
    d = settings_mod.DEFAULTS
    r.add_argument("--size", type=int, default=d.size, help=f"longest side in pixels (default {d.size})")
    r.add_argument(
        "--iterations",
        type=int,
        default=d.iterations,
        help=f"iterations at the first (coarsest) scale (default {d.iterations})",
    )
    r.add_argument(
        "--scales",
        type=int,
        default=d.scales,
        help=f"coarse-to-fine scales; 0: one per doubling above {settings_mod.SCREEN_SIDE} px (default {d.scales})",
    )
    r.add_argument(
        "--finer-iterations",
        type=float,
        default=d.finer_iterations,
        metavar="SHARE",
        help=f"iterations at each finer scale, as a share of the previous one's (default {d.finer_iterations:g})",
    )
    r.add_argument(
        "--tile",
        type=int,
        default=d.tile,
        metavar="N",
        help="evaluate in tiles whose core is at most N px on a side: same result, bounded memory "
        "(default 0: only when the picture would not fit)",
    )
    r.add_argument("--optimizer", choices=settings_mod.OPTIMIZERS, default=d.optimizer)
    r.add_argument("--init", choices=settings_mod.INITS, default=d.init)
    r.add_argument("--content-layers", metavar="L1,L2", default=",".join(d.content_layers))
    r.add_argument(
        "--style-layers",
        metavar="L:W,...",
        default=",".join(f"{n}:{w:g}" for n, w in d.style_layers),
        help="style layers with weights, e.g. relu1_1:1,relu2_1:0.5",
    )
    r.add_argument("--content-weight", type=float, default=d.content_weight)
    r.add_argument("--style-weight", type=float, default=d.style_weight)
    r.add_argument("--tv-weight", type=float, default=d.tv_weight)
    r.add_argument("--style-scale", type=float, default=d.style_scale, help="style image size relative to the output")
    r.add_argument("--preserve-colors", action="store_true", help="keep the content's colours")
    r.add_argument("--pooling", choices=settings_mod.POOLINGS, default=d.pooling)
    r.add_argument("--seed", type=int, default=d.seed)
    r.add_argument("--step-size", type=float, default=None, help="optimiser step size (default: automatic)")
    r.add_argument("--device", default=d.device, help="auto, cpu, cuda, cuda:N or mps (default auto)")
    r.add_argument("--precision", choices=settings_mod.PRECISIONS, default=d.precision)
    r.add_argument(
        "--nondeterministic",
        action="store_true",
        help="let a GPU pick faster kernels whose results vary slightly from run to run",
    )
    r.add_argument(
        "--weights",
        default=d.weights,
        metavar="imagenet|untrained|PATH",
        help="VGG19 weights: imagenet (downloaded once), untrained, or a .pth file",
    )


def _parse_style_layers(text: str) -> dict[str, float]:
    layers: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, weight = item.partition(":")
        try:
            layers[name.strip()] = float(weight) if weight else 1.0
        except ValueError:
            raise UsageError(f"--style-layers: {weight!r} is not a number (in {item!r})") from None
    return layers


def _parse_floats(text: str, option: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{option}: expected numbers separated by commas, got {text!r}") from None


def _settings_data(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the options give, as ``settings.to_dict`` names them; options left at None are left out."""
    data: dict[str, Any] = {
        key: getattr(args, key)
        for key in SETTINGS_OPTIONS
        if key not in ("content_layers", "style_layers", "nondeterministic") and getattr(args, key) is not None
    }
    if args.content_layers is not None:
        data["content_layers"] = [n.strip() for n in args.content_layers.split(",") if n.strip()]
    if args.style_layers is not None:
        data["style_layers"] = _parse_style_layers(args.style_layers)
    if args.nondeterministic is not None:
        data["deterministic"] = not args.nondeterministic
    if getattr(args, "style_blend", None):
        data["style_blend"] = _parse_floats(args.style_blend, "--style-blend")
    return data


def settings_from_args(args: argparse.Namespace) -> settings_mod.Settings:
    """The Settings a ``render`` command line asks for (validated)."""
    settings = settings_mod.from_dict(_settings_data(args))
    if settings.style_blend and len(settings.style_blend) != len(args.styles):
        raise UsageError(f"--style-blend has {len(settings.style_blend)} weights for {len(args.styles)} style images")
    return settings


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

    from .core import imageio, weights

    content = imageio.load_image(args.content)
    styles = [imageio.load_image(path) for path in args.styles]
    painted = _regions(args, content.size, len(styles), stderr)

    bar = _DownloadBar(stderr) if progress_mode == "bar" else None
    try:
        loaded = weights.load_weights(settings.weights, download=True, progress=bar)
    finally:
        if bar:
            bar.close()
    if loaded.untrained:
        stderr.write(f"style-studio: using {loaded.label}\n")

    from .core import Busy, CheckpointStore

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
    from .core import StyleTransfer, imageio

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
    reporter = _Reporter(progress_mode, stdout, stderr)
    record: Progress | None = None
    try:
        with _signals_stop_the_render(cancel, stderr):
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


def batch(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    """Run ``style-studio batch``; 0 when every job is done or skipped, 1 when one failed."""
    from .core import check_jobs, jobs_from_arguments, jobs_from_file

    base = settings_mod.DEFAULTS
    if args.preset:
        try:
            base = settings_mod.loads(Path(args.preset).read_bytes(), source=Path(args.preset).name)
        except OSError as exc:
            raise UsageError(f"{args.preset}: the preset cannot be read ({exc.strerror or exc})") from None
    settings = settings_mod.from_dict(_settings_data(args), base=base)
    outdir = Path(args.output)
    if args.jobs:
        if args.photos or args.batch_styles:
            raise UsageError("give photos with --style, or --jobs, not both")
        jobs = jobs_from_file(Path(args.jobs), outdir, settings)
    else:
        if not args.photos or not args.batch_styles:
            raise UsageError("give one or more photos and --style with one or more style images (or --jobs FILE)")
        jobs = jobs_from_arguments([Path(p) for p in args.photos], [Path(p) for p in args.batch_styles], outdir,
                                   settings, f".{args.format}")  # fmt: skip
    check_jobs(jobs, outdir)
    if args.workers < 1:
        raise UsageError(f"--workers must be 1 or more, got {args.workers}")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{outdir}: the output folder cannot be made ({exc.strerror or exc})") from None
    if not os.access(outdir, os.W_OK):
        raise UsageError(f"{outdir}: the output folder is not writable")
    busy = f"{outdir} is the output folder of another style-studio batch; wait for it, or choose another -o"
    with held(folder_lock(outdir, "batch"), busy):
        return _run_jobs(args, jobs, stdout, stderr)


def _run_jobs(args: argparse.Namespace, jobs: Sequence[BatchJob], stdout: IO[str], stderr: IO[str]) -> int:
    """A checked batch's jobs, its output folder held by this process."""
    from .batch import BatchProgress, InProcess, ProcessPool, Runner, print_summary, run_batch
    from .core import weights
    from .ray_cluster import RayCluster

    for choice in sorted({job.settings.weights for job in jobs}):
        loaded = weights.load_weights(choice, download=True)  # every problem before anything runs
        if loaded.untrained:
            stderr.write(f"style-studio: using {loaded.label}\n")
    mode = args.progress or ("bar" if stderr.isatty() else "none")
    runner: Runner
    if args.ray:
        cluster = RayCluster(args.ray)
        cluster.jobs_hint = len(jobs)
        stderr.write(f"style-studio: on Ray: {cluster.connect()}\n")
        runner = cluster
    elif args.workers > 1:
        runner = ProcessPool(args.workers)
    else:
        runner = InProcess()
    progress = BatchProgress(mode, len(jobs), stdout, stderr)
    try:
        result = run_batch(jobs, runner, progress)
    finally:
        progress.close()
        if isinstance(runner, RayCluster):
            runner.close()
    if mode == "json":
        stdout.write(json.dumps({"summary": [o.to_json() for o in result.ordered()]}) + "\n")
    else:
        print_summary(result, stderr)
    if result.interrupted:
        stderr.write("style-studio: stopped; finished pictures are kept. Run the same command to do the rest\n")
        return EXIT_INTERRUPTED
    return 1 if result.failed else 0


class _DownloadBar:
    """A tqdm bar for the weights download, created on the first callback."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._bar: tqdm[None] | None = None

    def __call__(self, received: int, total: int | None) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=self._stream,
                desc="Downloading VGG19 weights",
            )
        self._bar.update(received - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class _Reporter:
    """Shows Progress records as a bar, JSON lines, or not at all."""

    def __init__(self, mode: str, stdout: IO[str], stderr: IO[str]) -> None:
        self.mode, self.stdout, self.stderr = mode, stdout, stderr
        self._bar: tqdm[None] | None = None

    def show(self, record: Progress) -> None:
        if self.mode == "json":
            self.stdout.write(json.dumps(record.to_json()) + "\n")
            self.stdout.flush()
            return
        if record.event:
            self._write(f"style-studio: {record.event}")
        if self.mode != "bar" or record.done:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=record.steps, file=self.stderr, unit="it", dynamic_ncols=True, desc=record.compute)
        where = f"scale {record.scale}/{record.scales} {record.width}×{record.height}"
        if record.within_iteration:
            where += f" part {record.part}/{record.parts}"
        self._bar.set_postfix_str(f"{where} loss {record.total_loss:.4g}", refresh=False)
        # Whole iterations and their parts: the bar moves during a long tiled iteration.
        self._bar.update(round(record.steps_done - self._bar.n, 6))

    def _write(self, line: str) -> None:
        if self._bar is not None:
            self._bar.write(line, file=self.stderr)
        else:
            self.stderr.write(line + "\n")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _interrupt(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _handling(signals: Sequence[signal.Signals], handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` for ``signals`` during the block (main thread only), the previous handlers put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, handler) for number in signals}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def _signals_stop_the_render(cancel: CancelToken, stderr: IO[str]) -> contextlib.AbstractContextManager[None]:
    """Ctrl+C (SIGINT) and SIGTERM stop a render after its current step, its checkpoint saved; a second one at once.

    A KeyboardInterrupt raised wherever the signal lands could land between
    two iterations, outside the run, which then had no chance to save. A
    SIGINT the shell ignores (a background job, ``nohup``) stays ignored.
    """

    def stop(signum: int, frame: object) -> None:
        if cancel.cancelled:
            raise KeyboardInterrupt
        cancel.cancel()
        stderr.write("style-studio: stopping after this step (Ctrl+C again stops at once)\n")

    wanted = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN else [])
    return _handling(wanted, stop)


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Entry point of ``style-studio`` and ``python -m style_studio``."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "render":
            logging.basicConfig(
                level=logging.INFO if args.verbose else logging.ERROR, format="style-studio: %(message)s", stream=stderr
            )
            return render(args, stdout, stderr)
        if args.command == "batch":
            logging.basicConfig(level=logging.ERROR, format="style-studio: %(message)s", stream=stderr)
            with _handling([signal.SIGTERM], _interrupt):  # kill, a job scheduler, a logout: as Ctrl+C
                return batch(args, stdout, stderr)
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return EXIT_USAGE
    except StyleStudioError as exc:
        stderr.write(f"style-studio: error: {exc}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader of --progress json went away (e.g. `| head`): not an error of
        # ours. Point stdout at devnull so the interpreter's final flush is quiet
        # (as the Python docs on SIGPIPE recommend).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    from .ui.app import run_app

    return run_app(content=getattr(args, "content", None), styles=getattr(args, "styles", None) or [])
